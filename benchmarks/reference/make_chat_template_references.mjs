// Makes the chat-template test data (test/data/chat/): a deterministic set of
// conversations (conversations.jsonl) and, for each real template in
// .cache/tokenizers (scripts/fetch_tokenizers.sh), its expected render of
// every conversation by HF's JavaScript Jinja (@huggingface/jinja, what
// transformers.js' apply_chat_template uses): MODEL.expected.jsonl, one line
// {"id", "text"} or {"id", "error"} (the template's raise_exception) each.
//
//   (cd /some/dir && npm install @huggingface/jinja@0.5.13)
//   NODE_PATH=/some/dir/node_modules node \
//     benchmarks/reference/make_chat_template_references.mjs [--check]
//
// --check renders again and fails if a committed file differs. The context is
// transformers' apply_chat_template's: the special tokens of
// tokenizer_config.json (strings or {"content"}; null ones left out),
// messages, tools and documents (null unless the case gives them),
// add_generation_prompt, then the case's extra context. The Python twin
// (make_chat_template_references.py) renders the same cases with
// transformers itself. The data avoids where @huggingface/jinja is known to
// differ from Python jinja2 (docs/runtime.md, Chat templates), or works
// around it (strip's argument, selectattr(..., "undefined"), reject: see
// below): floats
// (1.0 prints 1), None/True in output (JS prints "" and "true"), and the
// characters Python's and JavaScript's strip() disagree on (U+001C-U+001F,
// U+0085, U+FEFF).
import { createRequire } from "module";
import fs from "fs";
import path from "path";
import { fileURLToPath } from "url";

const require = createRequire(import.meta.url);
const { Template, Environment } = require(require.resolve("@huggingface/jinja", {
  paths: [process.env.NODE_PATH || "", process.cwd()],
}));

// @huggingface/jinja 0.5.13's str.strip/lstrip/rstrip ignore their `chars`
// argument and strip JavaScript's whitespace: Qwen3's
// content.lstrip('\n') would eat a leading space Python keeps. Its string
// methods get Python's semantics here (the one other fix is the selectattr
// substitution below).
{
  const env = new Environment();
  env.set("s", "x");
  const sample = env.lookupVariable("s");
  const StringValue = sample.constructor;
  const FunctionValue = sample.builtins.get("strip").constructor;
  const proto = Object.getPrototypeOf(sample);
  const original = Object.getOwnPropertyDescriptor(proto, "builtins").get;
  const pySpace = (c) =>
    (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c === 0x85 || c === 0xa0 ||
    c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
    c === 0x202f || c === 0x205f || c === 0x3000;
  const pyStrip = (s, chars, left, right) => {
    const cps = Array.from(s);
    const strip = chars === undefined || chars === null
      ? (c) => pySpace(c.codePointAt(0))
      : (c) => Array.from(chars).includes(c);
    let b = 0, e = cps.length;
    while (left && b < e && strip(cps[b])) ++b;
    while (right && e > b && strip(cps[e - 1])) --e;
    return cps.slice(b, e).join("");
  };
  Object.defineProperty(proto, "builtins", {
    get() {
      const map = original.call(this);
      if (!map.__py) {
        const value = this.value;
        for (const [name, l, r] of [["strip", 1, 1], ["lstrip", 1, 0], ["rstrip", 0, 1]])
          map.set(name, new FunctionValue((args) => {
            const chars = args.length && args[0].type !== "NullValue" ? args[0].value : null;
            return new StringValue(pyStrip(value, chars, l, r));
          }));
        map.__py = true;
      }
      return map;
    },
  });
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const outDir = path.join(root, "test/data/chat");
// The templates of the tokenizer_config.json files, and Llama 3.1 Instruct's
// (test/data/chat/llama3_1_instruct.jinja: the chat_template of
// meta-llama/Llama-3.1-8B-Instruct's tokenizer_config.json, Llama 3.1
// Community License; llama3_1's file here is the base model's short one)
// with llama3_1's special tokens.
const MODELS = ["qwen3", "qwen2_5", "llama3_1", "mistral_nemo", "llama3_1_instruct"];
const TEMPLATE_FILES = { llama3_1_instruct: ["llama3_1", "llama3_1_instruct.jinja"] };
const check = process.argv.includes("--check");

// mulberry32: the same cases on every run.
let seed = 29;
function rand() {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const chance = (p) => rand() < p;

const TEXTS = [
  "Hello! How are you today?",
  "What is the capital of France?",
  "The capital of France is Paris.",
  "Write a haiku about autumn leaves.",
  "Crimson leaves drifting,\nwhispers of the cooling wind,\nearth takes back its gold.",
  "Explain recursion in one sentence.",
  "def f(n):\n    return 1 if n < 2 else n * f(n - 1)\n",
  "```python\nprint('hi')\n```",
  "你好，请介绍一下你自己。",
  "我是一个人工智能助手，很高兴为你服务。",
  "東京の天気はどうですか？",
  "오늘 날씨가 좋네요.",
  "مرحبا، كيف حالك؟",
  "أنا بخير، شكرا لك!",
  "नमस्ते, आप कैसे हैं?",
  "Привет, как дела?",
  "Emoji test 😀🎉👨‍👩‍👧‍👦 🏳️‍🌈 done",
  "Mixed: résumé naïve café — “quotes” ‘single’ …",
  "Template-looking text: {{ messages }} and {% if x %}y{% endif %} and {# c #}",
  "Special tokens in text: <|im_end|> <|im_start|>user <|eot_id|> </s> [INST] [/INST]",
  "Tabs\tand  double  spaces and a trailing space ",
  "  leading and trailing whitespace  ",
  "\n\nleading newlines",
  "trailing newlines\n\n",
  "line one\nline two\r\nline three",
  "JSON: {\"a\": [1, 2, {\"b\": null}], \"c\": \"d\"}",
  "Backslashes \\n \\t \\\\ and quotes ' \"",
  "Math: 2 + 2 = 4; 3 * 7 = 21; x^2 - 1 = (x - 1)(x + 1)",
  "a",
  "OK.",
];
const EDGE = ["", " ", "\n", "\n\n", "\t", "  \n  ", "<think></think>", "</think>", "<think>"];
const SYSTEMS = [
  "You are a helpful assistant.",
  "You are a pirate. Answer like one.",
  "你是一个乐于助人的助手。",
  "Always answer in JSON.\nNever apologise.",
  "",
  "  system with spaces  ",
];
const REASONING = [
  "The user asks a simple question. I should answer briefly.",
  "Let me think step by step.\n1. First...\n2. Then...",
  "用户在打招呼，我应该礼貌回应。",
  "\nReasoning with surrounding newlines\n",
  "",
];

function text() {
  return chance(0.08) ? pick(EDGE) : pick(TEXTS);
}

function thinkContent() {
  const r = pick(REASONING), a = pick(TEXTS);
  return pick([
    `<think>\n${r}\n</think>\n\n${a}`,
    `<think>${r}</think>${a}`,
    `${r}</think>\n${a}`,
    `<think>\n${r}\n</think>\n\n\n${a}\n`,
    `prefix <think>${r}</think> middle </think> ${a}`,
  ]);
}

/// A conversation: optional system, alternating user/assistant turns.
function chat(turns, { system = chance(0.5), endWithUser = chance(0.5), think = 0 } = {}) {
  const messages = [];
  if (system) messages.push({ role: "system", content: pick(SYSTEMS) });
  for (let t = 0; t < turns; ++t) {
    messages.push({ role: "user", content: text() });
    if (t === turns - 1 && endWithUser) break;
    const m = { role: "assistant", content: text() };
    if (think && chance(think)) {
      if (chance(0.5)) m.content = thinkContent();
      else m.reasoning_content = pick(REASONING);
    }
    messages.push(m);
  }
  return messages;
}

function makeCases() {
  const cases = [];
  const add = (messages, addGenerationPrompt, extra = {}, note = "") =>
    cases.push({ id: cases.length, note, messages, add_generation_prompt: addGenerationPrompt, extra });
  for (let k = 0; k < 70; ++k) {
    const m = chat(1 + Math.floor(rand() * 4));
    add(m, m[m.length - 1].role === "user" ? chance(0.8) : chance(0.2), {}, "plain");
  }
  for (let k = 0; k < 50; ++k) {
    const m = chat(1 + Math.floor(rand() * 4), { think: 0.7 });
    add(m, m[m.length - 1].role === "user" ? chance(0.8) : false, {}, "think");
  }
  for (let k = 0; k < 20; ++k) {
    const m = chat(1 + Math.floor(rand() * 3), { endWithUser: true, think: 0.5 });
    add(m, true, { enable_thinking: chance(0.7) ? false : true }, "enable_thinking");
  }
  for (let k = 0; k < 30; ++k) {
    const m = chat(1 + Math.floor(rand() * 3));
    for (const x of m) if (chance(0.5)) x.content = pick(EDGE.concat(TEXTS.slice(17, 25)));
    add(m, chance(0.5), {}, "edge content");
  }
  // Not alternating, a system message later on, a lone assistant: Qwen and
  // Llama render them, Mistral's template raises.
  for (let k = 0; k < 10; ++k) {
    const m = chat(2, { system: true, endWithUser: false });
    const kind = k % 4;
    if (kind === 0) m.push({ role: "user", content: text() }, { role: "user", content: text() });
    else if (kind === 1) m.splice(2, 0, { role: "system", content: pick(SYSTEMS) });
    else if (kind === 2) m.splice(1, 0, { role: "assistant", content: text() });
    else m.push({ role: "assistant", content: text() });
    add(m, false, {}, "irregular");
  }
  // Tool calls (Qwen's and Mistral's formats; dict order as written).
  const tools = [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Get the weather of a city",
        parameters: {
          type: "object",
          properties: { city: { type: "string", description: "城市" }, unit: { type: "string", enum: ["c", "f"] } },
          required: ["city"],
        },
      },
    },
    {
      type: "function",
      function: {
        name: "search",
        description: "Search the web",
        parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
        return: { type: "string" },
      },
    },
  ];
  for (let k = 0; k < 20; ++k) {
    const m = [];
    if (chance(0.5)) m.push({ role: "system", content: pick(SYSTEMS) });
    m.push({ role: "user", content: text() });
    const id = "call" + String(10000 + k).padStart(5, "0");
    const args = k % 2 ? { unit: "c", city: pick(["Paris", "北京", "القاهرة"]) } : { query: pick(TEXTS), n: 3 };
    m.push({
      role: "assistant",
      content: chance(0.5) ? "" : text(),
      tool_calls: [{ id, type: "function", function: { name: k % 2 ? "get_weather" : "search", arguments: args } }],
    });
    m.push({ role: "tool", tool_call_id: id, content: pick(["{\"temp\": 21}", "sunny", "结果：晴"]) });
    if (chance(0.6)) m.push({ role: "assistant", content: text() });
    add(m, m[m.length - 1].role !== "assistant", k % 3 ? { tools } : {}, "tools");
  }
  // Llama 3.1 Instruct's built-in tools (<|python_tag|>) and date_string.
  for (let k = 0; k < 8; ++k) {
    const m = [{ role: "user", content: text() }];
    const query = pick(TEXTS.slice(0, 12));
    m.push({
      role: "assistant",
      content: "",
      tool_calls: [{ id: "call0000" + k, type: "function", function: { name: "brave_search", arguments: { query } } }],
    });
    m.push({ role: "ipython", content: pick(["sunny", "结果：晴"]) });
    if (k % 2) m.push({ role: "assistant", content: text() });
    add(m, !(k % 2), { builtin_tools: ["brave_search", "code_interpreter", "wolfram_alpha"], date_string: "05 Dec 2026" },
        "builtin tools");
  }
  return cases;
}

function specialTokens(config) {
  const out = {};
  for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
    const v = config[key];
    if (v === undefined || v === null) continue;
    out[key] = typeof v === "string" ? v : v.content;
  }
  if (Array.isArray(config.additional_special_tokens) && config.additional_special_tokens.length)
    out.additional_special_tokens = config.additional_special_tokens.map((v) => (typeof v === "string" ? v : v.content));
  return out;
}

function jsonl(rows) {
  return rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
}

const cases = makeCases();
const files = { "conversations.jsonl": jsonl(cases) };
for (const model of MODELS) {
  const [tokensOf, templateFile] = TEMPLATE_FILES[model] || [model, null];
  const cfgPath = path.join(root, ".cache/tokenizers", tokensOf, "tokenizer_config.json");
  if (!fs.existsSync(cfgPath)) {
    console.error(`${cfgPath} is missing: run scripts/fetch_tokenizers.sh`);
    process.exit(1);
  }
  const config = JSON.parse(fs.readFileSync(cfgPath, "utf8"));
  // @huggingface/jinja 0.5.13's selectattr(attr, "undefined") selects
  // nothing (Python's keeps the items without attr), so Mistral's role
  // alternation check would never run: rejectattr(attr, "defined") is the
  // same filter in Python and works in JavaScript.
  if (templateFile) config.chat_template = fs.readFileSync(path.join(outDir, templateFile), "utf8");
  const source = config.chat_template.replaceAll('selectattr("tool_calls", "undefined")',
                                                 'rejectattr("tool_calls", "defined")');
  // It has no `reject` filter either: Llama 3.1 Instruct's
  // builtin_tools | reject('equalto', 'code_interpreter') becomes a variable
  // the generator computes (the same list).
  const source2 = source.replaceAll("builtin_tools | reject('equalto', 'code_interpreter')",
                                    "builtin_tools_but_code_interpreter");
  const tmpl = new Template(source2);
  const rows = cases.map((c) => {
    const context = {
      ...specialTokens(config),
      messages: c.messages,
      tools: null,
      documents: null,
      add_generation_prompt: c.add_generation_prompt,
      ...c.extra,
    };
    if (c.extra.builtin_tools)
      context.builtin_tools_but_code_interpreter = c.extra.builtin_tools.filter((t) => t !== "code_interpreter");
    try {
      return { id: c.id, text: tmpl.render(context) };
    } catch (e) {
      return { id: c.id, error: String(e.message) };
    }
  });
  files[`${model}.expected.jsonl`] = jsonl(rows);
}
let bad = 0;
for (const [name, body] of Object.entries(files)) {
  const p = path.join(outDir, name);
  if (check) {
    if (!fs.existsSync(p) || fs.readFileSync(p, "utf8") !== body) {
      console.error(`${p} differs from a fresh render`);
      bad = 1;
    }
  } else {
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(p, body);
  }
}
console.log(`${cases.length} conversations, ${MODELS.length} templates${check ? (bad ? ": DIFFERS" : ": same") : ""}`);
process.exit(bad);
