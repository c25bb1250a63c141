// The tokenizer corpus and its expected ids (test/data/tokenizer), made with
// HF's tokenizers itself: the Rust library through its official Node.js
// binding (npm package `tokenizers`, prebuilt native binaries; the library
// transformers' fast tokenizers run), from the real tokenizer.json files
// that scripts/fetch_tokenizers.sh puts in .cache/tokenizers. TokenizerTest
// checks swift's C++ tokenizer against them.
//
//   mkdir -p /tmp/node-ref && cd /tmp/node-ref && npm install tokenizers@0.23.2
//   cd /tmp/node-ref && node REPO/benchmarks/reference/make_tokenizer_references.mjs REPO/test/data/tokenizer
//
// (run where the npm package is installed: it is resolved from the current
// directory; SWIFT_TOKENIZERS_DIR overrides REPO/.cache/tokenizers).
// make_tokenizer_references.py writes the same id files with the Python
// binding (transformers' dependency), for a machine that has it.
//
// Writes OUT/corpus.jsonl, one string a line: {"text": "..."}, or
// {"hex": "..."} for the byte strings that are not valid UTF-8 (decoded here
// with replacement characters, as TextDecoder and Python's
// bytes.decode("utf-8", errors="replace") do: what swift does with them);
// and OUT/NAME.jsonl per tokenizer, line i the ids of corpus line i:
// {"ids": [...]} (add_special_tokens false) and, when the ids with
// add_special_tokens true differ, "prefix" and "suffix" (those ids are
// prefix + ids + suffix) or else "special" (those ids in full). The files
// are gzipped (NAME.jsonl.gz) when WRITE_GZIP is not 0.
//
// And OUT/variant-NAME.jsonl.gz for the variants of variants.json (real
// files with fields changed), line i for the i-th valid string of the
// corpus.
//
// The corpus is deterministic (a fixed-seed generator): hand-picked strings,
// then generated ones mixing scripts, code, whitespace, digits,
// contractions, special-token lookalikes, emoji, NFC/NFD pairs, long and
// empty strings, code points of every plane, and invalid UTF-8.

import fs from "fs";
import zlib from "zlib";
import path from "path";
import { createRequire } from "module";
import { fileURLToPath } from "url";

const require = createRequire(path.join(process.cwd(), "noop.js"));
const { Tokenizer } = require("tokenizers");

const out = process.argv[2];
if (!out) {
  console.error("usage: node make_tokenizer_references.mjs OUT_DIR");
  process.exit(2);
}
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tokDir = process.env.SWIFT_TOKENIZERS_DIR || path.join(repo, ".cache/tokenizers");
export const NAMES = ["qwen3", "qwen2_5", "llama3_1", "llama2", "mistral_nemo"];

// A small deterministic generator (mulberry32).
let seed = 29;
function rand() {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const int = (n) => Math.floor(rand() * n);

const HAND = [
  "", " ", "  ", "\n", "\r\n", "\t", "a", "Hello world", "Hello  world", " Hello", "Hello ",
  "hello\n\nworld", "x\r\n\r\ny", "tab\there", "   leading", "trailing   ", "\n\n\n", " \n \n ",
  "\u00a0nbsp\u00a0", "ideographic\u3000space", "\u3000\u3000", "\u2028line sep\u2029para",
  "\v vertical \f formfeed", "\u0085next line", "\u200bzero width", "\ufeffbom",
  "I'm here", "you're", "they've", "we'll", "he'd", "it's", "don't", "I'M", "YOU'RE", "They'Ve",
  "WE'LL", "HE'D", "IT'S", "DON'T", "'s", "'S", "'t'", "''", "rock'n'roll", "O'Neil's",
  "1", "12", "123", "1234", "12345", "123456789", "3.14159", "1,000,000", "2026-12-05",
  "00000000000000000000", "99 bottles", "v1.2.3", "0x1F", "١٢٣٤٥", "१२३४५", "一二三",
  "Ⅻ", "½ ¾", "²³", "①②③",
  "<|im_start|>", "<|im_end|>", "<|im_start|>user\nHi<|im_end|>\n", "<|im_start|", "< |im_end|>",
  "<|im_start|><|im_start|>", "<|im_start|>>", "<<|im_end|>", "<|endoftext|>", "<|end_of_text|>",
  "<|begin_of_text|>Hello", "<|eot_id|>", "<|start_header_id|>system<|end_header_id|>\n\n",
  "<s>", "</s>", "<s> hi </s>", "<unk>", "[INST]", "[INST] Hello [/INST]", "[/INST]", "<s>[INST]",
  "<think>\n\n</think>\n\n", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|fim_prefix|>x<|fim_suffix|>",
  " <|im_end|> ", "a<|im_end|>b", "<|IM_END|>", "<|im_end |>", "<|reserved_special_token_5|>",
  "<0x0A>", "<0xFF>", "▁", "▁▁hello", "Ġ", "Ċ",
  "日本語のテキスト", "中文文本测试", "한국어 텍스트", "العربية نص", "हिन्दी पाठ", "ภาษาไทย", "עברית",
  "Ελληνικά", "Русский текст", "ქართული", "Հայերեն", "አማርኛ", "தமிழ்", "বাংলা", "ગુજરાતી", "ꯃꯤꯇꯩ",
  "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏿‍💻", "🇫🇷🇯🇵", "❤️", "🫠", "🧑‍🤝‍🧑", "1️⃣", "©®™",
  "e\u0301", "\u00e9", "Cafe\u0301", "Caf\u00e9", "A\u030a", "\u212b", "\u1e9b\u0323", "\u0071\u0307\u0323",
  "\u0915\u093c", "\u0958", "\uac00", "\u1100\u1161", "ﬁ", "ｆｕｌｌｗｉｄｔｈ", "𝐛𝐨𝐥𝐝", "Å", "ǅ", "ß ẞ", "İı",
  "ſ's 'ſ", "K",
  // Llama 3's ignore_merges: whole words in its vocabulary that its merges
  // would not reach.
  "ilmektedir", "anglicky", "lardan", "mektedir sahuje",
  // Letters new in Unicode 15.1/16.0 (HF's Oniguruma has 16.0, ICU 72 has
  // 15.0) and 17.0 (not letters for HF yet).
  "\u{13460}'s", "a\u{141B9}'ll", "?!\u{13FB9}<unk>", "\u{2EBF0}\u{2EBF1} x", "\u{10940}'s", "\u{1E6C0}'t",
  // What HF's normalization tables (older than Unicode 13) do not know: a
  // later composition, later combining marks, later compatibility mappings.
  "\u{11935}\u{11930}", "a\u0345\u0898b", "x\u0345\u1AC1\u0301", "\u32FF \uA7F2\uAB69", "def f(x):\n    return x + 1\n", "int main() {\n\treturn 0;\n}\n",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}", "for (auto &x : v) { x *= 2; }",
  "    if x:\n        pass\n", "```python\nprint('hi')\n```", "a = b && c || !d;",
  "SELECT * FROM t WHERE id = 42;", "https://example.com/path?q=1&r=2#frag", "user@example.com",
  "#include <vector>\n", "\\n\\t\\\\", "$HOME/bin:/usr/bin", "=== ---- ____ ****",
  "!!!???...", "“quotes” ‘single’ «guillemets»", "— – -", "…", "\u0000nul", "\u0001\u0002\u001f",
  "\u007f", "\ud7ff\ue000\uffff", "\u{10ffff}", "\u{1f600}\u{1f600}\u{1f600}",
];

const WORDS = [
  "the", "The", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "HELLO", "World", "tokenizer",
  "multilingual", "fine-tuning", "don't", "it's", "you're", "WE'VE", "I'll", "she'd", "I'm",
  "東京", "学习", "機械学習", "の", "は", "데이터", "مرحبا", "بالعالم", "नमस्ते", "दुनिया", "สวัสดี", "ครับ",
  "Привет", "мир", "Γειά", "σου", "שלום", "naïve", "café", "Ångström", "straße", "Ǆemal", "İstanbul",
  "e\u0301te\u0301", "n\u0303", "o\u0308", "\u1100\u1161\u11a8", "ﬀ", "😀", "👍🏻", "👩‍❤️‍👨", "🇺🇸",
  "🏃‍♀️", "🤷🏽‍♂️", "λx", "∑", "∞", "x²", "α+β", "ⅷ", "١٢", "߀",
];
const CODE = [
  "def foo(bar, baz=None):", "    return [x for x in range(10)]", "if (a != b) { return -1; }",
  "std::vector<int64_t> ids;", "#pragma once", "{\"role\": \"user\", \"content\": \"hi\"}", "x => x * 2",
  "// comment", "/* block */", "<div class=\"a\">", "</div>", "SELECT id FROM users;", "a[i] += b[j];",
  "print(f\"{x:>10}\")", "fn main() -> Result<(), Box<dyn Error>> {", "@decorator", "lambda: None",
  "0xDEADBEEF", "1e-5", "-3.5e+10", "i++", "&&", "||", "::", "->", "=>", "...", "$", "%", "^", "~",
];
const SPACES = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ",
  "\u00a0", "\u3000", "\u2009", " \t \n", "\r\n\r\n", "\n\t", "        "];
const SPECIAL = [
  "<|im_start|>", "<|im_end|>", "<|im_start|", "|im_end|>", "< |im_end|>", "<|im_end |>", "<|endoftext|>",
  "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|end_of_text|>",
  "<s>", "</s>", "<s", "s>", "< s>", "<unk>", "[INST]", "[/INST]", "[INST", "<think>", "</think>",
  "<tool_call>", "</tool_call>", "<|fim_middle|>", "<|python_tag|>", "<pad>", "[SYSTEM_PROMPT]",
];

function digits() {
  let s = "";
  const n = 1 + int(25);
  for (let i = 0; i < n; i++) s += String(int(10));
  return s;
}
function randomChar() {
  // A code point from one of several blocks, never a surrogate.
  const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff],
    [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f],
    [0x3000, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xff00, 0xffef], [0x1f300, 0x1faff],
    [0x1d400, 0x1d7ff], [0x10000, 0x1007f]];
  const [lo, hi] = pick(blocks);
  return String.fromCodePoint(lo + int(hi - lo + 1));
}
function fragment() {
  const r = rand();
  if (r < 0.35) return pick(WORDS);
  if (r < 0.5) return pick(CODE);
  if (r < 0.62) return pick(SPACES);
  if (r < 0.7) return digits();
  if (r < 0.78) return pick(SPECIAL);
  if (r < 0.88) { let s = ""; for (let i = 1 + int(6); i > 0; i--) s += randomChar(); return s; }
  if (r < 0.94) return pick(HAND);
  return pick(["'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "'", "\"", ".", ",", "!", "?", ";", ":"]);
}
function generated() {
  const long = rand() < 0.02;
  const n = long ? 100 + int(400) : 1 + int(8);
  let s = "";
  for (let i = 0; i < n; i++) {
    s += fragment();
    const r = rand();
    if (r < 0.55) s += " ";
    else if (r < 0.65) s += pick(SPACES);
  }
  return s;
}
// Byte strings that are not valid UTF-8: a valid string with bytes broken.
function invalidBytes() {
  const bytes = Array.from(Buffer.from(generated() || "x", "utf8"));
  const bad = [[0x80], [0xbf], [0xc0, 0x80], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf0, 0x9f],
    [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xff], [0xfe, 0xff], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf],
    [0xc1, 0xbf], [0xe2, 0x28, 0xa1], [0xf0, 0x28, 0x8c, 0xbc]];
  for (let k = 1 + int(3); k > 0; k--) {
    const at = int(bytes.length + 1);
    bytes.splice(at, 0, ...pick(bad));
  }
  if (rand() < 0.3 && bytes.length > 1) bytes.length = bytes.length - 1; // maybe a cut character
  return Buffer.from(bytes);
}

// Any code point of any plane (no surrogates), mixed with the fragments.
function anyCodePoints() {
  let s = "";
  for (let k = 1 + int(30); k > 0; k--) {
    if (rand() < 0.5) {
      let c = rand() < 0.3 ? 0x20 + int(0x60) : rand() < 0.5 ? int(0x10000) : int(0x110000);
      if (c >= 0xd800 && c <= 0xdfff) c = 0x41;
      s += String.fromCodePoint(c);
    } else {
      s += fragment();
    }
  }
  return s;
}

const entries = HAND.map((t) => ({ text: t }));
for (let i = 0; i < 5000; i++) entries.push({ text: generated() });
for (let i = 0; i < 500; i++) entries.push({ text: anyCodePoints() });
for (let i = 0; i < 200; i++) {
  const b = invalidBytes();
  // Keep only those that really are invalid.
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(b);
    continue;
  } catch {}
  entries.push({ hex: b.toString("hex") });
}
const textOf = (e) => (e.hex !== undefined
  ? new TextDecoder("utf-8").decode(Buffer.from(e.hex, "hex")) : e.text);

// A line of NAME.jsonl: "special" as the ids the post-processor puts
// before and after the text's ("prefix", "suffix") when it is those around
// "ids", else in full.
function referenceLine(ids, special) {
  const line = { ids };
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  if (same(ids, special)) return line;
  for (let k = 0; k + ids.length <= special.length; k++) {
    if (same(special.slice(k, k + ids.length), ids)) {
      line.prefix = special.slice(0, k);
      line.suffix = special.slice(k + ids.length);
      return line;
    }
  }
  line.special = special;
  return line;
}

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "corpus.jsonl"), entries.map((e) => JSON.stringify(e)).join("\n") + "\n");
// Each text's ids without and with special tokens.
async function encodeAll(tok, texts) {
  const plain = await tok.encodeBatch(texts, { addSpecialTokens: false });
  const special = await tok.encodeBatch(texts, { addSpecialTokens: true });
  return texts.map((_, i) => JSON.stringify(referenceLine(plain[i].getIds(), special[i].getIds())));
}

for (const name of NAMES) {
  const tok = Tokenizer.fromFile(path.join(tokDir, name, "tokenizer.json"));
  const lines = await encodeAll(tok, entries.map(textOf));
  const text = lines.join("\n") + "\n";
  if (process.env.WRITE_GZIP === "0") fs.writeFileSync(path.join(out, name + ".jsonl"), text);
  else fs.writeFileSync(path.join(out, name + ".jsonl.gz"), zlib.gzipSync(text, { level: 9 }));
  console.log(`${name}: ${entries.length} strings`);
}

// Variants (test/data/tokenizer/variants.json): real files with fields set
// by JSON pointer, on the first 1,500 valid strings of the corpus.
const variants = JSON.parse(fs.readFileSync(path.join(repo, "test/data/tokenizer/variants.json"), "utf8"));
const firstValid = entries.filter((e) => e.text !== undefined).slice(0, 1500).map((e) => e.text);
for (const v of variants.variants) {
  const j = JSON.parse(fs.readFileSync(path.join(tokDir, v.base, "tokenizer.json"), "utf8"));
  for (const [pointer, value] of Object.entries(v.set)) {
    const keys = pointer.split("/").slice(1);
    let o = j;
    for (const k of keys.slice(0, -1)) o = o[k];
    o[keys[keys.length - 1]] = value;
  }
  const lines = await encodeAll(Tokenizer.fromString(JSON.stringify(j)), firstValid);
  fs.writeFileSync(path.join(out, `variant-${v.name}.jsonl.gz`), zlib.gzipSync(lines.join("\n") + "\n", { level: 9 }));
  console.log(`variant ${v.name}: ${lines.length} strings`);
}
