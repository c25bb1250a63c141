// HF tokenizers' encode_batch (the Rust library, through its Node binding,
// npm `tokenizers` 0.23.2: the same code Python's `tokenizers` runs) on the
// "text" lines of a JSONL file, each with the EOS text appended as swift-run
// appends it (TRL's add_eos). encodeBatch runs on every core (rayon).
// Prints one JSON line: {"samples", "tokens", "seconds"} (encodeBatch only,
// best of REPEAT), for tokenize_bench_node.sh.
//   node tokenize_bench_node.mjs TOKENIZER_JSON DATA.jsonl EOS [REPEAT]
import { Tokenizer } from "tokenizers";
import { readFileSync } from "node:fs";

const [tokenizerJson, data, eos, repeat = "3"] = process.argv.slice(2);
const tok = Tokenizer.fromFile(tokenizerJson);
const texts = readFileSync(data, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => {
    const t = JSON.parse(l).text;
    return t.endsWith(eos) ? t : t + eos;
  });
let best = Infinity, tokens = 0;
for (let r = 0; r < Number(repeat); ++r) {
  const t0 = process.hrtime.bigint();
  const enc = await tok.encodeBatch(texts, { addSpecialTokens: true });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  tokens = enc.reduce((n, e) => n + e.getIds().length, 0);
  best = Math.min(best, s);
}
console.log(JSON.stringify({ samples: texts.length, tokens, seconds: best }));
