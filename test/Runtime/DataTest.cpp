//===- DataTest.cpp - JSONL data: packing, labels, loss, bad data ---------===//
//
// swift-run --data FILE.jsonl end to end (the harness of RunPlan.h): a
// packed window gives the step its samples give run alone (padded), -100
// labels are left out of the loss, world 2 reproduces world 1, tokens/s
// counts real tokens, and every kind of bad line exits 2 naming the line.
//
//===----------------------------------------------------------------------===//
#include "Fifo.h"
#include "RunPlan.h"

#include "swift/Runtime/core/Check.h"
#include "swift/Runtime/io/Data.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <random>

using namespace swift::rt::testing;

namespace {

/// 16 samples in pairs that fill a window of 32 (30 to 32 positions), so
/// greedy packing makes exactly 8 windows of two samples each.
std::vector<Sample> pairedSamples(unsigned seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  std::vector<Sample> out;
  for (int i = 0; i < 8; ++i) {
    int a = uniform(5, 27), b = 32 - a - uniform(0, 2);
    for (int n : {a, b}) {
      Sample s;
      for (int k = 0; k < n; ++k)
        s.ids.push_back(uniform(0, 255));
      out.push_back(s);
    }
  }
  return out;
}

/// tinyPlan with one sample per window (padding) and a global batch of 16.
json paddedPlan(int world) {
  json p = tinyPlan(0, world);
  p["training"]["packing"] = false;
  p["training"]["global_batch_size"] = 16;
  p["training"]["gradient_accumulation"] = 16 / (2 * world);
  return p;
}

/// What makeTokenSource says of a JSONL file whose line 2 is `line`
/// (vocab 256, windows of 32), or "" when it takes the file.
std::string refusal(const std::string &line) {
  const std::string path = freshDir() + "/bad.jsonl";
  const std::string good = R"({"input_ids": [1, 2, 3]})";
  std::ofstream(path) << good << "\n" << line << "\n" << good << "\n";
  try {
    swift::rt::makeTokenSource(path, 256, 32, 0);
  } catch (const swift::rt::UserError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Jsonl, PackedWindowsGiveTheStepOfTheirSamplesRunAlone) {
  // Packed: 8 windows of two samples, global batch 8. Padded: the same 16
  // samples one per window, global batch 16. Same samples in every step,
  // so the same mean over trained tokens and the same gradients, if and
  // only if attention stays inside each sample and positions restart.
  std::string data = writeJsonl(pairedSamples(7));
  Result packed = runPlan(tinyPlan(0, 1),
                          "--steps 3 --save-params params.bin --data " + data);
  Result padded = runPlan(paddedPlan(1),
                          "--steps 3 --save-params params.bin --data " + data);
  expectSameLosses(padded, packed, 1e-5, "packed vs padded");
  EXPECT_LT(maxAbsDiff(readParams(padded.dir + "/params.bin"),
                       readParams(packed.dir + "/params.bin")),
            kParamTol);
  // Every token of the 16 samples is real; a step reads them all.
  int64_t real = 0;
  for (const Sample &s : pairedSamples(7))
    real += int64_t(s.ids.size());
  ASSERT_EQ(packed.metrics.size(), 3u);
  EXPECT_EQ(packed.metrics[0].at("tokens").get<int64_t>(), real);
  EXPECT_EQ(padded.metrics[0].at("tokens").get<int64_t>(), real);

  // The comparison sees boundaries: each pair merged into one sample (one
  // sequence, attention across the old boundary) trains differently.
  std::vector<Sample> merged;
  auto paired = pairedSamples(7);
  for (size_t i = 0; i < paired.size(); i += 2) {
    Sample s = paired[i];
    s.ids.insert(s.ids.end(), paired[i + 1].ids.begin(),
                 paired[i + 1].ids.end());
    merged.push_back(s);
  }
  Result joined =
      runPlan(tinyPlan(0, 1), "--steps 3 --data " + writeJsonl(merged));
  ASSERT_EQ(joined.exitCode, 0) << joined.output;
  EXPECT_GT(std::fabs(joined.losses()[0] - packed.losses()[0]), 1e-3);
}

TEST(Jsonl, PackingIsBestFitDecreasingInFileOrder) {
  // Lengths 20, 20, 12, 12 in windows of 32: next-fit in file order needs
  // three windows (20 | 20+12 | 12); best-fit decreasing fills two,
  // {sample 0, sample 2} and {sample 1, sample 3}, listed by first sample.
  std::vector<Sample> samples;
  for (int i = 0; i < 4; ++i) {
    Sample s;
    for (int k = 0; k < (i < 2 ? 20 : 12); ++k)
      s.ids.push_back(10 * i + k % 10);
    samples.push_back(s);
  }
  auto source = swift::rt::makeTokenSource(writeJsonl(samples), 256, 32, 0);
  EXPECT_EQ(source->realTokens(0, 2), 64); // both windows full
  EXPECT_EQ(source->realTokens(2, 1), 32); // window 2 is window 0 again
  swift::rt::Batch b = source->batch(0, 2);
  auto row = [&](int r, int from, int n) {
    std::vector<int64_t> ids;
    for (int k = from; k < from + n; ++k)
      ids.push_back(b.inputs[r][k].item<int64_t>());
    return ids;
  };
  auto idsOf = [&](int i) {
    return std::vector<int64_t>(samples[size_t(i)].ids.begin(),
                                samples[size_t(i)].ids.end());
  };
  EXPECT_EQ(row(0, 0, 20), idsOf(0));
  EXPECT_EQ(row(0, 20, 12), idsOf(2));
  EXPECT_EQ(row(1, 0, 20), idsOf(1));
  EXPECT_EQ(row(1, 20, 12), idsOf(3));
  EXPECT_EQ(b.positions[0][20].item<int64_t>(), 0); // restarts per sample
  EXPECT_EQ(b.segments[0][20].item<int64_t>(), 1);
}

TEST(Jsonl, MinusHundredLabelsAreNotTrainedOn) {
  // Causal: a sample whose last k labels are -100 trains exactly as the
  // sample cut after its last trained target (no position before the cut
  // sees the tokens after it). The loss is the mean over trained tokens
  // of the step, so the counts must agree too.
  std::vector<Sample> masked = pairedSamples(11), cut = masked;
  for (size_t i = 0; i < masked.size(); ++i) {
    const int n = int(masked[i].ids.size()), keep = std::max(2, n - 1 - int(i));
    masked[i].labels = masked[i].ids;
    for (int k = keep; k < n; ++k)
      masked[i].labels[k] = -100;
    masked[i].labels[0] = -100; // never a target anyway (HF shifts)
    cut[i].ids.resize(keep);
  }
  Result a = runPlan(paddedPlan(1), "--steps 3 --save-params params.bin "
                                    "--data " + writeJsonl(masked));
  Result b = runPlan(paddedPlan(1), "--steps 3 --save-params params.bin "
                                    "--data " + writeJsonl(cut));
  expectSameLosses(b, a, 1e-5, "-100 tail vs cut sample");
  EXPECT_LT(maxAbsDiff(readParams(a.dir + "/params.bin"),
                       readParams(b.dir + "/params.bin")),
            kParamTol);
  // tokens/s counts the real tokens, padding excluded.
  EXPECT_LT(b.metrics[0].at("tokens").get<int64_t>(),
            a.metrics[0].at("tokens").get<int64_t>());
}

TEST(Jsonl, WorldTwoReproducesWorldOne) {
  std::vector<Sample> samples = pairedSamples(3);
  for (size_t i = 0; i < samples.size(); i += 3) { // some labels masked
    samples[i].labels = samples[i].ids;
    samples[i].labels[1] = samples[i].labels[2] = -100;
  }
  std::string data = " --data " + writeJsonl(samples);
  for (int zero : {1, 3})
    expectSameLosses(
        runPlan(tinyPlan(zero, 1), "--steps 3" + data),
        runPlan(tinyPlan(zero, 2), "--steps 3 --nproc-per-node 2" + data),
        kLossTol, "JSONL world 2, zero " + std::to_string(zero));
  json p1 = paddedPlan(1), p2 = paddedPlan(2);
  expectSameLosses(runPlan(p1, "--steps 2" + data),
                   runPlan(p2, "--steps 2 --nproc-per-node 2" + data),
                   kLossTol, "JSONL padded, world 2");
}

TEST(Jsonl, BadLinesExitTwoNamingTheLine) {
  const std::string good = R"({"input_ids": [1, 2, 3]})";
  struct Case {
    std::string line, message;
  };
  const std::vector<Case> cases = {
      {"[1, 2]", "line 2: expected an object"},
      {"{\"input_ids\": [1, 2", "line 2: not valid JSON"},
      {R"({"labels": [1, 2]})", "line 2: missing \"input_ids\""},
      {R"({"input_ids": [1, "x"]})", "line 2: input_ids[1] is \"x\", not an integer"},
      {R"({"input_ids": [1, 2.5]})", "line 2: input_ids[1] is 2.5, not an integer"},
      {R"({"input_ids": 7})", "line 2: input_ids is not a list of integers"},
      {R"({"input_ids": []})", "line 2: input_ids is empty"},
      {R"({"input_ids": [1, 256]})",
       "line 2: input_ids[1] is 256, not in [0, model.vocab_size 256)"},
      {R"({"input_ids": [-1]})", "line 2: input_ids[0] is -1"},
      {R"({"input_ids": [1, 2], "labels": [1]})",
       "line 2: labels has 1 entries, input_ids 2"},
      {R"({"input_ids": [1, 2], "labels": [1, -5]})",
       "line 2: labels[1] is -5, not in [0, model.vocab_size 256) or -100"},
  };
  for (const Case &c : cases) {
    std::string path = freshDir() + "/bad.jsonl";
    std::ofstream(path) << good << "\n" << c.line << "\n" << good << "\n";
    Result r = runPlan(tinyPlan(0, 1), "--steps 1 --data " + path);
    EXPECT_EQ(r.exitCode, 2) << c.line << "\n" << r.output;
    EXPECT_NE(r.output.find("bad.jsonl: " + c.message), std::string::npos)
        << c.line << "\n" << r.output;
  }
  // A plan's packing must be a boolean.
  json p = tinyPlan(0, 1);
  p["training"]["packing"] = "no";
  Result r = runPlan(p, "--steps 1");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("packing"), std::string::npos) << r.output;
}

TEST(Data, TheNameSaysTheFormatAndBlankLinesCarryNoSample) {
  // Raw token files are any bytes: only their own names are read as such,
  // so an HF-style .json or a .parquet is refused instead of trained on.
  const std::string dir = freshDir();
  std::ofstream(dir + "/sft.json") << R"([{"input_ids": [1, 2, 3]}])" << "\n";
  std::ofstream(dir + "/train.parquet") << "PAR1....PAR1";
  std::filesystem::create_directory(dir + "/dir.bin");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"sft.json", "sft.json: a .json file; --data reads JSON Lines"},
      {"train.parquet", "train.parquet: unknown data format"},
      {"dir.bin", "dir.bin: is a directory"},
  };
  for (const auto &[name, message] : refused) {
    Result r = runPlan(tinyPlan(0, 1), "--steps 1 --data " + dir + "/" + name);
    EXPECT_EQ(r.exitCode, 2) << name << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos)
        << name << "\n" << r.output;
  }
  // Blank lines (between samples, at the end) are skipped as HF's JSON
  // reader skips them: the same samples, the same losses.
  const std::string a = R"({"input_ids": [5, 6, 7, 8, 9]})",
                    b = R"({"input_ids": [9, 8, 7], "labels": [-100, 8, 7]})";
  std::ofstream(dir + "/plain.jsonl") << a << "\n" << b << "\n";
  std::ofstream(dir + "/blank.jsonl")
      << "\n" << a << "\n  \n\r\n" << b << "\n\n";
  // A file with nothing to learn from: every label -100 but the first
  // (which is never a target), or one-token samples.
  std::ofstream(dir + "/nothing.jsonl")
      << R"({"input_ids": [5, 6, 7], "labels": [5, -100, -100]})" << "\n"
      << R"({"input_ids": [9]})" << "\n";
  Result nothing = runPlan(tinyPlan(0, 1), "--steps 1 --data " + dir + "/nothing.jsonl");
  EXPECT_EQ(nothing.exitCode, 2) << nothing.output;
  EXPECT_NE(nothing.output.find("nothing.jsonl: no sample has a target"),
            std::string::npos)
      << nothing.output;
  Result plain = runPlan(tinyPlan(0, 1), "--steps 2 --data " + dir + "/plain.jsonl");
  Result blank = runPlan(tinyPlan(0, 1), "--steps 2 --data " + dir + "/blank.jsonl");
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  ASSERT_EQ(blank.exitCode, 0) << blank.output;
  EXPECT_EQ(plain.losses(), blank.losses());
}

TEST(Jsonl, LinesAreStrictJsonAndMessagesQuoteValuesAsWrittenInOneShortLine) {
  struct Case {
    std::string line, message;
  };
  const std::string longText(5000, 'x');
  const std::vector<Case> cases = {
      // A key given twice: a JSON reader keeps the last copy silently.
      {R"({"input_ids": [1, 2], "input_ids": [3]})",
       "bad.jsonl: line 2: input_ids: the key \"input_ids\" is given twice"},
      {R"({"input_ids": [1, 2], "labels": [1, 2], "labels": [-100, 2]})",
       "bad.jsonl: line 2: labels: the key \"labels\" is given twice"},
      // Ids past 64 bits (a float to the parser) and past int64 (unsigned),
      // quoted as written, not as 9.999999999999999e+22 or wrapped.
      {R"({"input_ids": [1, 99999999999999999999999]})",
       "line 2: input_ids[1] is 99999999999999999999999, not in [0, "
       "model.vocab_size 256)"},
      {R"({"input_ids": [1, 9223372036854775808]})",
       "line 2: input_ids[1] is 9223372036854775808, not in [0, "
       "model.vocab_size 256)"},
      {R"({"input_ids": [1, -99999999999999999999999]})",
       "line 2: input_ids[1] is -99999999999999999999999, not in [0, "
       "model.vocab_size 256)"},
      {R"({"input_ids": [1, 2], "labels": [1, 1E+30]})",
       "line 2: labels[1] is 1E+30, not an integer"},
      {R"({"input_ids": [1, 2.50]})", "line 2: input_ids[1] is 2.50, not an integer"},
      // Keys HF would train with that swift-run does not read.
      {R"({"input_ids": [1, 2], "label": [1, 2]})",
       "line 2: \"label\" is not read: HF's collators rename it to "
       "\"labels\""},
      {R"({"input_ids": [1, 2], "position_ids": [0, 1]})",
       "line 2: \"position_ids\" is not read"},
  };
  for (const Case &c : cases) {
    const std::string why = refusal(c.line);
    EXPECT_NE(why.find(c.message), std::string::npos) << c.line << "\n" << why;
  }
  // Ids past 64 bits are found as written in one pass over the line, not
  // one per id (5000 of them took seconds).
  {
    std::string ids = "1";
    for (int k = 0; k < 5000; ++k)
      ids += ", 99999999999999999999999";
    const auto start = std::chrono::steady_clock::now();
    const std::string why = refusal(R"({"input_ids": [)" + ids + "]}");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                  .count(),
              1.0);
    EXPECT_NE(why.find("input_ids[1] is 99999999999999999999999, not in"),
              std::string::npos)
        << why;
  }
  // Columns HF's Trainer drops are ignored: {"text": ...} beside the ids.
  EXPECT_EQ(refusal(R"({"input_ids": [1, 2], "text": "hello", "id": 7})"), "");
  // Never the line, never 2 KB: a long value is cut; a key's newline is
  // escaped; a path 200 objects deep is cut.
  std::string deep = R"({"input_ids": [1, 2], "x": )", closing = "}";
  for (int k = 0; k < 200; ++k) {
    deep += R"({"key)" + std::to_string(k) + R"(_of_some_length": )";
    closing += "}";
  }
  deep += R"({"k": 1, "k": 2})" + closing;
  for (const std::string &line :
       {std::string(R"({"input_ids": [1, 2], "a\nb": 1, "a\nb": 2})"), deep,
        R"({"input_ids": [1, ")" + longText + R"("]})",
        R"({"input_ids": [1, 2], "labels": [1, 2], ")" + longText +
            R"(": 1, ")" + longText + R"(": 2})",
        R"({"input_ids": [1, 2, )" + longText + "]}"}) {
    const std::string why = refusal(line);
    EXPECT_FALSE(why.empty()) << line.substr(0, 60);
    EXPECT_LT(why.size(), 400u) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

TEST(Jsonl, AttentionMaskPaddingIsDroppedAndAnythingElseRefused) {
  // A tokenizer's padded line (left and right padding, mask 0, labels -100
  // there) trains exactly as the line without its padding.
  const std::string dir = freshDir();
  std::ofstream(dir + "/padded.jsonl")
      << R"({"input_ids": [0, 0, 5, 6, 7, 8], "attention_mask": [0, 0, 1, 1, 1, 1], )"
      << R"("labels": [-100, -100, -100, 6, 7, 8]})" << "\n"
      << R"({"input_ids": [9, 8, 7, 2, 2], "attention_mask": [1, 1, 1, 0, 0]})"
      << "\n";
  std::ofstream(dir + "/plain.jsonl")
      << R"({"input_ids": [5, 6, 7, 8], "labels": [-100, 6, 7, 8]})" << "\n"
      << R"({"input_ids": [9, 8, 7]})" << "\n";
  for (bool packing : {true, false}) {
    auto padded = swift::rt::makeTokenSource(dir + "/padded.jsonl", 256, 32, 0, packing);
    auto plain = swift::rt::makeTokenSource(dir + "/plain.jsonl", 256, 32, 0, packing);
    const int64_t windows = packing ? 1 : 2;
    swift::rt::Batch a = padded->batch(0, windows), b = plain->batch(0, windows);
    EXPECT_TRUE(a.inputs.equal(b.inputs)) << packing;
    EXPECT_TRUE(a.targets.equal(b.targets)) << packing;
    if (packing) {
      EXPECT_TRUE(a.positions.equal(b.positions));
      EXPECT_TRUE(a.segments.equal(b.segments));
    }
    EXPECT_EQ(padded->realTokens(0, windows), 7);
    EXPECT_EQ(padded->trainedTokens(0, windows), plain->trainedTokens(0, windows));
  }
  struct Case {
    std::string line, message;
  };
  const std::vector<Case> cases = {
      {R"({"input_ids": [1, 2, 3], "attention_mask": [1, 0, 1]})",
       "line 2: attention_mask[1] is 0 between attended tokens (0 to 2)"},
      {R"({"input_ids": [1, 2, 3], "attention_mask": [1, 1]})",
       "line 2: attention_mask has 2 entries, input_ids 3"},
      {R"({"input_ids": [1, 2, 3], "attention_mask": [1, 2, 1]})",
       "line 2: attention_mask[1] is 2, not 0 or 1"},
      {R"({"input_ids": [1, 2, 3], "attention_mask": [1, true, 1]})",
       "line 2: attention_mask[1] is true, not an integer"},
      {R"({"input_ids": [1, 2, 3], "attention_mask": [0, 0, 0]})",
       "line 2: attention_mask is all 0"},
      {R"({"input_ids": [1, 2, 3], "attention_mask": [1, 1, 0], "labels": [1, 2, 3]})",
       "line 2: labels[2] is 3 on padding (attention_mask[2] is 0), which is "
       "ambiguous: make it -100, or the mask 1"},
  };
  for (const Case &c : cases) {
    const std::string why = refusal(c.line);
    EXPECT_NE(why.find(c.message), std::string::npos) << c.line << "\n" << why;
  }
  // Padding does not count against the window: 40 ids, 30 attended.
  std::vector<int> ids(40, 3), mask(40, 1);
  std::fill(mask.begin(), mask.begin() + 10, 0);
  EXPECT_EQ(refusal(json({{"input_ids", ids}, {"attention_mask", mask}}).dump()), "");
}

TEST(Data, OnlyRegularFilesAreRead) {
  // A FIFO blocked the rank in open() until a writer came: refused at once.
  for (const char *name : {"/data.jsonl", "/tokens.bin"}) {
    const std::string path = freshDir() + name;
    swift::rt::testing::FifoGuard fifo(path);
    const auto start = std::chrono::steady_clock::now();
    std::string why;
    try {
      swift::rt::makeTokenSource(path, 256, 32, 0);
    } catch (const swift::rt::UserError &e) {
      why = e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                  .count(),
              2.0)
        << name;
    EXPECT_NE(why.find(path + ": is a FIFO, not a regular file"), std::string::npos)
        << why;
  }
}
