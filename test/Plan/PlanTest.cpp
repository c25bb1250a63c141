//===- PlanTest.cpp - plan.json schema: parsing, validation, schedules ----===//
//
// The schedule algorithm (buildSchedule) and rules (checkSchedule) are
// tested here through plan.json; test/Passes checks the swift.schedule IR
// the passes translate them into.
//
#include "swift/Plan/Plan.h"
#include "swift/Plan/Error.h"
#include "swift/Plan/Json.h"
#include "swift/Plan/Schedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

using namespace swift::plan;
using nlohmann::json;

namespace {

json basePlan(int zero = 0, int world = 1) {
  return json::parse(R"({
    "schema": "swift.plan", "version": 1,
    "model": {"hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 256,
              "tie_word_embeddings": true, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0},
    "training": {"sequence_length": 32, "global_batch_size": 8,
                 "micro_batch_size": 2, "gradient_accumulation": 4,
                 "precision": "fp32",
                 "optimizer": {"lr": 1e-3, "betas": [0.9, 0.95],
                               "eps": 1e-8, "weight_decay": 0.0}},
    "world": {"size": 1},
    "strategy": {"zero": 0, "offload": "none", "checkpointing": "none"}
  })")
      .patch(json::array(
          {{{"op", "replace"}, {"path", "/strategy/zero"}, {"value", zero}},
           {{"op", "replace"}, {"path", "/world/size"}, {"value", world}},
           {{"op", "replace"},
            {"path", "/training/gradient_accumulation"},
            {"value", 4 / world}}}));
}

std::string errorOf(const json &j) {
  try {
    parsePlanText(j.dump(), "p.json");
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

/// The plan with its derived schedule written out, as the compiler would.
json explicitPlan(int zero, int world) {
  return json::parse(
      planToJson(parsePlanText(basePlan(zero, world).dump(), "p")));
}

TEST(Plan, ExamplesParse) {
  int n = 0;
  for (auto &e : std::filesystem::directory_iterator(SWIFT_EXAMPLES_DIR)) {
    if (e.path().extension() != ".json")
      continue;
    EXPECT_NO_THROW(parsePlan(e.path().string())) << e.path();
    ++n;
  }
  EXPECT_GE(n, 2);
}

TEST(Plan, ModelDefaultsAndParameterCount) {
  Plan p = parsePlanText(basePlan().dump(), "p");
  EXPECT_EQ(p.model.headDim, 16); // hidden / heads
  EXPECT_EQ(p.model.numKvHeads, 2);
  // Llama-3.2-1B's published size: 1,235,814,400 parameters (tied).
  ModelConfig m;
  m.hiddenSize = 2048;
  m.intermediateSize = 8192;
  m.numLayers = 16;
  m.numHeads = 32;
  m.numKvHeads = 8;
  m.headDim = 64;
  m.vocabSize = 128256;
  m.tieWordEmbeddings = true;
  EXPECT_EQ(m.numParameters(), 1235814400);
}

TEST(Plan, DerivedSchedulesValidateForEveryStrategy) {
  for (int zero = 0; zero <= 3; ++zero)
    for (const char *offload : {"none", "optimizer", "optimizer+params"})
      for (const char *ck : {"none", "selective", "full"})
        for (bool tied : {true, false})
          for (int depth : {0, 1, 2}) {
            json j = basePlan(zero, 2);
            j["strategy"]["offload"] = offload;
            j["strategy"]["checkpointing"] = ck;
            j["strategy"]["prefetch_depth"] = depth;
            j["model"]["tie_word_embeddings"] = tied;
            bool legal =
                !((std::string(offload) != "none" && zero == 0) ||
                  (std::string(offload) == "optimizer+params" && zero != 3));
            std::string err = errorOf(j);
            EXPECT_EQ(err.empty(), legal) << "zero " << zero << " " << offload
                                          << " " << ck << ": " << err;
            if (legal) // and its explicit form round-trips
              EXPECT_EQ(errorOf(json::parse(
                            planToJson(parsePlanText(j.dump(), "p")))),
                        "");
          }
}

TEST(Plan, FirstKLayersCheckpointed) {
  json j = basePlan();
  j["strategy"]["checkpointing"] = "full";
  j["strategy"]["checkpoint_layers"] = 1;
  Plan p = parsePlanText(j.dump(), "p");
  EXPECT_EQ(p.schedule.units[1].checkpoint, Checkpointing::Full);
  EXPECT_EQ(p.schedule.units[2].checkpoint, Checkpointing::None);
}

TEST(Plan, ErrorsNameTheFieldAndWhy) {
  json j = basePlan();
  j["version"] = 7;
  EXPECT_EQ(errorOf(j), "p.json: version: plan schema version 7 is not "
                        "supported by this swift-run (reads version 1)");
  j = basePlan();
  j["training"]["optimizer"]["betas"] = {0.9};
  EXPECT_EQ(errorOf(j),
            "p.json: training.optimizer.betas: expected [beta1, beta2]");
  j = basePlan();
  j["strategy"]["offload"] = "optimizer";
  EXPECT_NE(errorOf(j).find("strategy.offload: offload needs zero >= 1"),
            std::string::npos);
  j = basePlan();
  j["model"]["hidden_size"] = "64";
  EXPECT_EQ(errorOf(j),
            "p.json: model.hidden_size: expected an integer, got string \"64\"");
}

// Numbers that do not fit: nlohmann reports a double overflow (1e400) as
// out_of_range, which must not escape parsePlanText; whole numbers beyond
// int64 are "out of range", not "not an integer", and never wrap.
TEST(Plan, NumbersThatDoNotFitNameTheField) {
  std::string text = basePlan().dump();
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string t = text;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  auto errorOfText = [](const std::string &t) -> std::string {
    try {
      parsePlanText(t, "p.json");
    } catch (const UserError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorOfText(replace("\"lr\":0.001", "\"lr\":1e400")),
            "p.json: training.optimizer.lr: number overflow parsing '1e400' "
            "(not a finite number)");
  EXPECT_EQ(errorOfText(replace("\"betas\":[0.9,0.95]",
                                "\"betas\":[0.9,-1e999]")),
            "p.json: training.optimizer.betas[1]: number overflow parsing "
            "'-1e999' (not a finite number)");
  EXPECT_EQ(errorOfText(replace("\"hidden_size\":64", "\"hidden_size\":1e400")),
            "p.json: model.hidden_size: number overflow parsing '1e400' (not "
            "a finite number)");
  // NaN is not JSON at all.
  EXPECT_EQ(errorOfText(replace("\"lr\":0.001", "\"lr\":NaN"))
                .rfind("p.json: not valid JSON: ", 0),
            0u);
  json j = basePlan();
  j["training"]["global_batch_size"] = 18446744073709551615ull;
  EXPECT_EQ(errorOf(j), "p.json: training.global_batch_size: value "
                        "18446744073709551615 out of range [1, 1099511627776]");
  j = basePlan();
  j["model"]["num_hidden_layers"] = 1e20;
  EXPECT_EQ(errorOf(j), "p.json: model.num_hidden_layers: value 1e+20 out of "
                        "range [1, 4096]");
}

// micro x world x accumulation = global, without overflow: a micro-batch
// of 2^32 + 1 times an accumulation of 2^32 wrapped to a product equal to
// the global batch, passed validation and failed later allocating.
TEST(Plan, BatchProductIsCheckedWithoutOverflow) {
  json j = basePlan();
  j["training"]["global_batch_size"] = 4294967297LL; // 2^32 + 1
  j["training"]["micro_batch_size"] = 4294967297LL;
  j["training"]["gradient_accumulation"] = 4294967297LL;
  // (2^32+1)^2 mod 2^64 = 2^33 + 1; with world 1 and micro = global the
  // product is checked, not wrapped.
  EXPECT_NE(errorOf(j).find("training.gradient_accumulation: global_batch_size"),
            std::string::npos)
      << errorOf(j);
  j = basePlan();
  j["training"]["global_batch_size"] = 8;
  j["training"]["micro_batch_size"] = 16;
  j["training"]["gradient_accumulation"] = 1;
  EXPECT_EQ(errorOf(j), "p.json: training.micro_batch_size: 16 sequences, "
                        "more than global_batch_size (8)");
  // A wrap that lands exactly on the global batch: 2^62 x 4 = 2^64 = 0 mod
  // 2^64, + ... : micro 2^62, world 1, accumulation 4, global 2^62 is
  // refused as a mismatch (the product 2^64 is not 2^62).
  j = basePlan();
  j["training"]["global_batch_size"] = int64_t(1) << 40;
  j["training"]["micro_batch_size"] = int64_t(1) << 39;
  j["training"]["gradient_accumulation"] = int64_t(1) << 25; // 2^64: wraps to 0
  EXPECT_NE(errorOf(j).find("gradient_accumulation"), std::string::npos);
}

// The strict JSON reader every swift reader uses (Json.h).
TEST(Json, DuplicateKeysDeepNestingAndOverflowAreRefused) {
  auto error = [](const std::string &text) {
    try {
      parseJson(text, "f.json");
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(R"({"a": 1, "b": {"c": 2, "c": 3}})"),
            "f.json: b.c: the key \"c\" is given twice in one object (a JSON "
            "reader would keep one silently); give it once");
  EXPECT_EQ(error(R"([{"x": 1}, {"x": 1, "x": 1}])"),
            "f.json: [1].x: the key \"x\" is given twice in one object (a "
            "JSON reader would keep one silently); give it once");
  EXPECT_EQ(error(R"({"a": {"x": 1}, "b": {"x": 1}})"), ""); // other objects
  // A path of 250 levels of 40-character keys is cut to its innermost 200
  // characters (the whole would be a 10 KB line).
  std::string deep;
  for (int i = 0; i < 250; ++i)
    deep += "{\"" + std::string(39, 'k') + char('a' + i % 26) + "\": ";
  deep += "{\"x\": 1, \"x\": 2}" + std::string(250, '}');
  const std::string deepError = error(deep);
  EXPECT_EQ(deepError.rfind("f.json: ...k", 0), 0u) << deepError;
  EXPECT_NE(deepError.find(std::string(39, 'k') + "p.x: the key \"x\" is "
                           "given twice"),
            std::string::npos)
      << deepError;
  EXPECT_LT(deepError.size(), 400u) << deepError;
  EXPECT_EQ(error(std::string(300, '[') + std::string(300, ']')),
            "f.json: nested deeper than 256 levels");
  EXPECT_EQ(error(R"({"lr": 1e400})"),
            "f.json: lr: number overflow parsing '1e400' (not a finite number)");
  EXPECT_NE(error("{\"a\": }").find("f.json: not valid JSON: "), std::string::npos);
  // A message quotes at most a bounded piece of the input.
  EXPECT_LT(error("{\"" + std::string(5000, 'k') + "\": 1, \"" +
                  std::string(5000, 'k') + "\": 2}")
                .size(),
            300u);
}

TEST(Json, FieldsAreRangeCheckedAndNamed) {
  json j = json::parse(R"({"step": 18446744073709551615, "v": "1", "n": -3,
                           "f": 1e300, "o": {"k": true}})");
  const std::string file = "m.json";
  JsonField root{j, "", file};
  auto error = [](auto &&read) {
    try {
      read();
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error([&] { root.at("step").integer(0, 1 << 30); }),
            "m.json: step: value 18446744073709551615 out of range [0, 1073741824]");
  EXPECT_EQ(error([&] { root.at("f").integer(0, 10); }),
            "m.json: f: value 1e+300 out of range [0, 10]");
  EXPECT_EQ(error([&] { root.at("v").integer(0, 10); }),
            "m.json: v: expected an integer, got string \"1\"");
  EXPECT_EQ(error([&] { root.at("n").integer(0, 10); }),
            "m.json: n: value -3 out of range [0, 10]");
  EXPECT_EQ(error([&] { root.at("o").at("k").string(); }),
            "m.json: o.k: expected a string, got boolean true");
  EXPECT_EQ(error([&] { root.at("missing"); }),
            "m.json: missing: missing required field");
  EXPECT_EQ(error([&] { root.onlyKeys({"step", "v", "n", "f"}); }),
            "m.json: o: unknown field");
  // An unknown enum value is quoted, cut: never the whole string.
  json precision = {{"precision", std::string(5000, 'p')}};
  EXPECT_EQ(error([&] {
              JsonField{precision, "", file}.at("precision").choice<Precision>();
            }),
            "m.json: precision: unknown value \"" + std::string(40, 'p') +
                "...\" (expected " + enumChoices<Precision>() + ")");
}

// Only regular files are read: a FIFO would block the reader forever.
TEST(Json, OnlyRegularFilesAreRead) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "swift-json-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto error = [](const std::string &path) {
    try {
      readRegularFile(path, "a plan file", 1 << 20);
    } catch (const UserError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(fifo), fifo + ": is a FIFO, not a regular file; expected a plan file");
  EXPECT_EQ(error(dir.string()), dir.string() + ": is a directory; expected a plan file");
  fs::create_symlink(dir / "loop", dir / "loop");
  EXPECT_NE(error((dir / "loop").string()).find(": cannot read the file: "),
            std::string::npos);
  std::ofstream((dir / "big").string()) << std::string(2 << 20, ' ');
  EXPECT_EQ(error((dir / "big").string()),
            (dir / "big").string() +
                ": is larger than 1 MiB; expected a plan file");
  fs::remove_all(dir);
}

TEST(Plan, LrScheduleAndClippingRoundTrip) {
  // Absent: constant lr, no warmup, no clipping; the writer leaves them out.
  Plan p = parsePlanText(basePlan().dump(), "p.json");
  EXPECT_TRUE(p.training.lrSchedule.isDefault());
  EXPECT_FALSE(p.training.maxGradNorm.has_value());
  json out = json::parse(planToJson(p));
  EXPECT_FALSE(out["training"].contains("lr_schedule"));
  EXPECT_FALSE(out["training"].contains("max_grad_norm"));

  json j = basePlan();
  j["training"]["lr_schedule"] = {
      {"warmup_steps", 10}, {"decay", "cosine"}, {"min_lr_ratio", 0.1}};
  j["training"]["max_grad_norm"] = 0.5;
  p = parsePlanText(j.dump(), "p.json");
  EXPECT_EQ(p.training.lrSchedule.warmupSteps, 10);
  EXPECT_EQ(p.training.lrSchedule.decay, LrDecay::Cosine);
  EXPECT_DOUBLE_EQ(p.training.lrSchedule.minLrRatio, 0.1);
  EXPECT_EQ(p.training.maxGradNorm, 0.5);
  out = json::parse(planToJson(p));
  EXPECT_EQ(out["training"]["lr_schedule"], j["training"]["lr_schedule"]);
  EXPECT_EQ(out["training"]["max_grad_norm"], 0.5);
  EXPECT_EQ(planToJson(parsePlanText(out.dump(), "q")), planToJson(p));
}

TEST(Plan, TruncationAndLossOnRoundTrip) {
  // Absent (plans written before them): drop and assistant, left out again.
  Plan p = parsePlanText(basePlan().dump(), "p.json");
  EXPECT_EQ(p.training.truncation, Truncation::Drop);
  EXPECT_EQ(p.training.lossOn, LossOn::Assistant);
  json out = json::parse(planToJson(p));
  EXPECT_FALSE(out["training"].contains("truncation"));
  EXPECT_FALSE(out["training"].contains("loss_on"));
  for (const auto &t : EnumTraits<Truncation>::kSpellings)
    for (const auto &l : EnumTraits<LossOn>::kSpellings) {
      json j = basePlan();
      j["training"]["truncation"] = t.name;
      j["training"]["loss_on"] = l.name;
      p = parsePlanText(j.dump(), "p.json");
      EXPECT_EQ(p.training.truncation, t.value);
      EXPECT_EQ(p.training.lossOn, l.value);
      EXPECT_EQ(planToJson(parsePlanText(planToJson(p), "q")), planToJson(p));
    }
  json bad = basePlan();
  bad["training"]["truncation"] = "middle";
  EXPECT_NE(errorOf(bad).find("training.truncation"), std::string::npos)
      << errorOf(bad);
  bad = basePlan();
  bad["training"]["loss_on"] = true;
  EXPECT_NE(errorOf(bad).find("training.loss_on"), std::string::npos)
      << errorOf(bad);
}

TEST(Plan, LrScheduleErrors) {
  json j = basePlan();
  j["training"]["lr_schedule"] = {{"decay", "cosin"}};
  EXPECT_NE(errorOf(j).find("training.lr_schedule.decay: unknown value "
                            "\"cosin\" (expected constant | linear | cosine)"),
            std::string::npos)
      << errorOf(j);
  j = basePlan();
  j["training"]["lr_schedule"] = {{"warmup", 3}};
  EXPECT_NE(errorOf(j).find("training.lr_schedule.warmup"), std::string::npos);
  j = basePlan();
  j["training"]["lr_schedule"] = {{"min_lr_ratio", 1.5}};
  EXPECT_NE(errorOf(j).find("training.lr_schedule.min_lr_ratio"),
            std::string::npos);
  j = basePlan();
  j["training"]["max_grad_norm"] = 0;
  EXPECT_EQ(errorOf(j), "p.json: training.max_grad_norm: must be > 0 (leave "
                        "it out for no clipping)");
}

// lrAt() against HF transformers' lr_lambda(s) at s = step - 1 (LambdaLR
// starts at 0 and steps after each optimizer step), evaluated by hand.
TEST(Plan, LrAtIsHFsSchedule) {
  TrainingConfig t;
  t.optimizer.lr = 1e-3;
  EXPECT_DOUBLE_EQ(lrAt(t, 1, 10), 1e-3); // constant, no warmup
  EXPECT_DOUBLE_EQ(lrAt(t, 10, 10), 1e-3);
  t.lrSchedule.warmupSteps = 4; // get_constant_schedule_with_warmup
  EXPECT_DOUBLE_EQ(lrAt(t, 1, 10), 0.0);
  EXPECT_DOUBLE_EQ(lrAt(t, 2, 10), 0.25e-3);
  EXPECT_DOUBLE_EQ(lrAt(t, 5, 10), 1e-3);
  t.lrSchedule.warmupSteps = 2; // get_linear_schedule_with_warmup
  t.lrSchedule.decay = LrDecay::Linear;
  EXPECT_DOUBLE_EQ(lrAt(t, 1, 10), 0.0);
  EXPECT_DOUBLE_EQ(lrAt(t, 2, 10), 0.5e-3);
  EXPECT_DOUBLE_EQ(lrAt(t, 3, 10), 1e-3);       // (10 - 2) / 8
  EXPECT_DOUBLE_EQ(lrAt(t, 10, 10), 0.125e-3);  // (10 - 9) / 8
  t.lrSchedule.minLrRatio = 0.2;                // floor: 0.2 + 0.8 f
  EXPECT_DOUBLE_EQ(lrAt(t, 10, 10), (0.2 + 0.8 * 0.125) * 1e-3);
  t.lrSchedule = {}; // get_cosine_with_min_lr_schedule_with_warmup
  t.lrSchedule.decay = LrDecay::Cosine;
  t.lrSchedule.minLrRatio = 0.1;
  EXPECT_DOUBLE_EQ(lrAt(t, 1, 10), 1e-3);
  EXPECT_DOUBLE_EQ(lrAt(t, 6, 10), (0.1 + 0.9 * 0.5) * 1e-3); // p = 1/2
  EXPECT_NEAR(lrAt(t, 11, 10), 0.1e-3, 1e-18);                // p = 1
  t.lrSchedule.minLrRatio = 0; // get_cosine_schedule_with_warmup
  t.lrSchedule.warmupSteps = 1;
  EXPECT_DOUBLE_EQ(lrAt(t, 1, 5), 0.0);
  EXPECT_DOUBLE_EQ(lrAt(t, 2, 5), 1e-3);
  EXPECT_DOUBLE_EQ(lrAt(t, 4, 5), 0.5 * (1 + std::cos(M_PI * 0.5)) * 1e-3);
}

// The compiler's writer: planToJson()'s text once parsePlanText() accepts
// it, else no text and the parser's one line, named as the caller says.
TEST(Plan, CheckedPlanJsonIsPlanToJsonOnceTheParserAcceptsIt) {
  Plan p = parsePlanText(basePlan(3, 2).dump(), "p.json");
  std::string error;
  EXPECT_EQ(checkedPlanJson(p, "the emitted plan", error), planToJson(p));
  EXPECT_EQ(error, "");
  p.training.gradientAccumulation = 3; // 2 x 2 x 3 != 8
  EXPECT_EQ(checkedPlanJson(p, "the emitted plan", error), "");
  EXPECT_EQ(error, "the emitted plan: training.gradient_accumulation: "
                   "global_batch_size (8) != micro_batch_size (2) * "
                   "world.size (2) * gradient_accumulation (3)");
}

TEST(Plan, WorldMismatchIsAUserError) {
  Plan p = parsePlanText(basePlan(0, 4).dump(), "p.json");
  try {
    checkPlanMatchesWorld(p, 2);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_STREQ(e.what(), "p.json: world.size: plan is for 4 ranks but the "
                           "job was started with 2");
  }
}

// strategy.dp_shard (HSDP): absent means one shard group of every rank and
// is left out again; a smaller group is read, written and read back the
// same; a value equal to world.size is that default.
TEST(Plan, DpShardDefaultsToTheWorldAndRoundTrips) {
  Plan p = parsePlanText(basePlan(3, 4).dump(), "p.json");
  EXPECT_EQ(p.strategy.dpShard, 0);
  ShardGroups g = shardGroups(p.strategy, p.world);
  EXPECT_EQ(g.shard, 4);
  EXPECT_EQ(g.replicas, 1);
  EXPECT_FALSE(g.hybrid());
  EXPECT_FALSE(json::parse(planToJson(p))["strategy"].contains("dp_shard"));

  for (int zero : {1, 2, 3})
    for (int shard : {1, 2}) {
      json j = basePlan(zero, 4);
      j["strategy"]["dp_shard"] = shard;
      p = parsePlanText(j.dump(), "p.json");
      g = shardGroups(p.strategy, p.world);
      EXPECT_EQ(g.shard, shard);
      EXPECT_EQ(g.replicas, 4 / shard);
      EXPECT_TRUE(g.hybrid());
      // The schedule is the plain ZeRO one: reduce-scatter buckets (the
      // all-reduce across the groups is implied by dp_shard).
      for (const Bucket &b : p.schedule.buckets)
        EXPECT_EQ(b.collective, Collective::ReduceScatter);
      json out = json::parse(planToJson(p));
      EXPECT_EQ(out["strategy"]["dp_shard"], shard) << "zero " << zero;
      EXPECT_EQ(planToJson(parsePlanText(out.dump(), "q")), planToJson(p));
    }

  json all = basePlan(0, 4); // the whole world: the default, even at zero 0
  all["strategy"]["dp_shard"] = 4;
  p = parsePlanText(all.dump(), "p.json");
  EXPECT_EQ(p.strategy.dpShard, 0);
  EXPECT_FALSE(json::parse(planToJson(p))["strategy"].contains("dp_shard"));
}

TEST(Plan, DpShardRefusalsNameTheFieldAndWhy) {
  json j = basePlan(3, 4);
  j["strategy"]["dp_shard"] = 3;
  EXPECT_EQ(errorOf(j),
            "p.json: strategy.dp_shard: 3 does not divide world.size (4)");
  j["strategy"]["dp_shard"] = 8;
  EXPECT_EQ(errorOf(j),
            "p.json: strategy.dp_shard: 8 does not divide world.size (4)");
  j = basePlan(0, 4);
  j["strategy"]["dp_shard"] = 2;
  EXPECT_EQ(errorOf(j),
            "p.json: strategy.dp_shard: shard groups of 2 of the 4 ranks "
            "need zero >= 1 (zero 0 keeps every unit whole on every rank; "
            "leave dp_shard out)");
  j = basePlan(3, 4);
  j["strategy"]["dp_shard"] = 0;
  EXPECT_NE(errorOf(j).find("p.json: strategy.dp_shard: value 0 out of range"),
            std::string::npos)
      << errorOf(j);
  j["strategy"]["dp_shard"] = "2";
  EXPECT_NE(errorOf(j).find("p.json: strategy.dp_shard: expected an integer"),
            std::string::npos)
      << errorOf(j);
}

TEST(Schedule, ZeroThreeUseBeforeGatherIsRejected) {
  json j = explicitPlan(3, 2);
  // Unit 1 is prefetched by unit 0's entry and listed again in its own
  // (a no-op when resident); remove both.
  j["schedule"]["forward"][0]["gather"] = json::array({0});
  j["schedule"]["forward"][1]["gather"] = json::array({2});
  EXPECT_NE(errorOf(j).find("schedule.forward[1]: unit 1 needs the parameters "
                            "of unit 1, which are not gathered"),
            std::string::npos)
      << errorOf(j);
}

TEST(Schedule, ZeroThreeMustReleaseEverything) {
  json j = explicitPlan(3, 2);
  j["schedule"]["backward"][1]["release"] = json::array();
  EXPECT_NE(errorOf(j).find("still gathered after backward"), std::string::npos)
      << errorOf(j);
}

TEST(Schedule, GatherAtZeroTwoIsRejected) {
  json j = explicitPlan(2, 2);
  j["schedule"]["forward"][0]["gather"] = json::array({1});
  EXPECT_NE(errorOf(j).find("gather/release need zero 3"), std::string::npos);
}

TEST(Schedule, BucketReducedBeforeItsGradientsAreFinal) {
  json j = explicitPlan(0, 2);
  // Move every reduction to the head's backward entry (the first).
  json all = json::array();
  for (auto &st : j["schedule"]["backward"]) {
    for (auto &b : st["reduce"])
      all.push_back(b);
    st["reduce"] = json::array();
  }
  j["schedule"]["backward"][0]["reduce"] = all;
  EXPECT_NE(errorOf(j).find("whose gradients are not final yet"),
            std::string::npos)
      << errorOf(j);
}

TEST(Schedule, BucketCollectiveMustMatchTheStage) {
  json j = explicitPlan(1, 2);
  j["schedule"]["buckets"][0]["collective"] = "all_reduce";
  EXPECT_NE(errorOf(j).find("zero 1 reduces gradients with reduce_scatter"),
            std::string::npos);
  j = explicitPlan(3, 2);
  j["schedule"]["buckets"][0]["every_micro_batch"] = false;
  EXPECT_NE(errorOf(j).find("must reduce every micro-batch"),
            std::string::npos);
}

// How often a bucket is reduced is the schedule's choice where whole
// gradients are kept (ZeRO 0/1: every micro-batch reduces a micro-batch
// buffer into the accumulator or the shard; the engine runs either); at
// ZeRO 2/3 only shards are kept, so every micro-batch it is.
TEST(Schedule, ReductionFrequencyIsFreeWhereWholeGradientsAreKept) {
  auto explicitBuckets = [](int zero) { // one unit per bucket
    json j = basePlan(zero, 2);
    j["strategy"]["bucket_bytes"] = 1;
    return json::parse(planToJson(parsePlanText(j.dump(), "p")));
  };
  for (int zero : {0, 1}) {
    json j = explicitBuckets(zero);
    ASSERT_GE(j["schedule"]["buckets"].size(), 2u);
    for (const json &b : j["schedule"]["buckets"])
      EXPECT_FALSE(b["every_micro_batch"].get<bool>()); // derived
    j["schedule"]["buckets"][0]["every_micro_batch"] = true;
    EXPECT_EQ(errorOf(j), "") << "zero " << zero;
    Plan p = parsePlanText(j.dump(), "p.json");
    EXPECT_TRUE(p.schedule.buckets[0].everyMicroBatch);
    EXPECT_FALSE(p.schedule.buckets[1].everyMicroBatch);
    for (json &b : j["schedule"]["buckets"])
      b["every_micro_batch"] = true;
    EXPECT_EQ(errorOf(j), "") << "zero " << zero;
  }
  for (int zero : {2, 3}) {
    json j = explicitBuckets(zero);
    j["schedule"]["buckets"][1]["every_micro_batch"] = false;
    EXPECT_EQ(errorOf(j), "p.json: schedule.buckets[1].every_micro_batch: "
                          "zero >= 2 keeps only gradient shards, so it must "
                          "reduce every micro-batch")
        << "zero " << zero;
  }
}

TEST(Schedule, BackwardOrderIsAutogradOrder) {
  json j = explicitPlan(0, 1);
  std::swap(j["schedule"]["backward"][0], j["schedule"]["backward"][1]);
  EXPECT_NE(errorOf(j).find("backward must compute units in order 3..0"),
            std::string::npos);
}

TEST(Schedule, BucketsFollowBucketBytes) {
  json j = basePlan(0, 2);
  j["strategy"]["bucket_bytes"] = 1; // one unit per bucket
  EXPECT_EQ(parsePlanText(j.dump(), "p").schedule.buckets.size(), 4u);
  j["strategy"]["bucket_bytes"] = int64_t(1) << 30; // everything in one
  EXPECT_EQ(parsePlanText(j.dump(), "p").schedule.buckets.size(), 1u);
}

TEST(Schedule, UnitsFollowTheStrategysCheckpointing) {
  json j = basePlan(0, 1);
  j["strategy"]["checkpointing"] = "full";
  j["strategy"]["checkpoint_layers"] = 1;
  j = json::parse(planToJson(parsePlanText(j.dump(), "p")));
  j["schedule"]["units"][1]["checkpoint"] = "selective";
  EXPECT_EQ(errorOf(j),
            "p.json: schedule.units[1].checkpoint: \"selective\" disagrees "
            "with the strategy (\"full\" from strategy.checkpointing "
            "\"full\", checkpoint_layers 1)");
  j["schedule"]["units"][1]["checkpoint"] = "full";
  j["schedule"]["units"][2]["checkpoint"] = "full"; // beyond checkpoint_layers
  EXPECT_NE(errorOf(j).find("schedule.units[2].checkpoint: \"full\" "
                            "disagrees"),
            std::string::npos)
      << errorOf(j);
}

TEST(Schedule, OffloadedInputsFollowTheStrategy) {
  json j = basePlan(0, 1);
  j["strategy"]["checkpointing"] = "full";
  j["strategy"]["offload_activations"] = 1;
  j["strategy"]["mlp_tile_tokens"] = 16;
  j["world"]["gpu_memory_bytes"] = int64_t(80) << 30;
  Plan p = parsePlanText(j.dump(), "p");
  EXPECT_TRUE(p.schedule.units[1].offloadInput);  // layer 0: the first k
  EXPECT_FALSE(p.schedule.units[2].offloadInput); // layer 1
  EXPECT_FALSE(p.schedule.units[0].offloadInput);
  EXPECT_EQ(p.strategy.mlpTileTokens, 16);
  EXPECT_EQ(p.world.gpuMemoryBytes, int64_t(80) << 30);
  // Round trip, and the defaults left out of the text.
  EXPECT_EQ(planToJson(parsePlanText(planToJson(p), "q")), planToJson(p));
  json out = json::parse(planToJson(parsePlanText(basePlan().dump(), "p")));
  EXPECT_FALSE(out["strategy"].contains("offload_activations"));
  EXPECT_FALSE(out["strategy"].contains("mlp_tile_tokens"));
  EXPECT_FALSE(out["world"].contains("gpu_memory_bytes"));
  EXPECT_FALSE(out["schedule"]["units"][1].contains("offload_input"));
  // -1: every checkpointed layer, within checkpoint_layers.
  j["strategy"]["offload_activations"] = -1;
  j["strategy"]["checkpoint_layers"] = 1;
  p = parsePlanText(j.dump(), "p");
  EXPECT_TRUE(p.schedule.units[1].offloadInput);
  EXPECT_FALSE(p.schedule.units[2].offloadInput);
  // The schedule may not disagree with the strategy.
  j = json::parse(planToJson(p));
  j["schedule"]["units"][2]["offload_input"] = true;
  EXPECT_EQ(errorOf(j), "p.json: schedule.units[2].offload_input: true "
                        "disagrees with the strategy (offload_activations -1 "
                        "over 1 fully checkpointed layers)");
  j = json::parse(planToJson(p));
  j["schedule"]["units"][0]["offload_input"] = true;
  EXPECT_EQ(errorOf(j), "p.json: schedule.units[0].offload_input: only "
                        "decoder units offload their input");
  // Offload moves a fully checkpointed layer's input: nothing else.
  json bad = basePlan();
  bad["strategy"]["offload_activations"] = -1;
  EXPECT_EQ(errorOf(bad),
            "p.json: strategy.offload_activations: offload_activations needs "
            "checkpointing \"full\" (a checkpointed layer's input is what "
            "moves to the host)");
  bad["strategy"]["checkpointing"] = "selective";
  EXPECT_NE(errorOf(bad).find("needs checkpointing"), std::string::npos);
  bad = basePlan();
  bad["strategy"]["mlp_tile_tokens"] = -4;
  EXPECT_NE(errorOf(bad).find("strategy.mlp_tile_tokens"), std::string::npos)
      << errorOf(bad);
  bad = basePlan();
  bad["world"]["gpu_memory_bytes"] = 0;
  EXPECT_NE(errorOf(bad).find("world.gpu_memory_bytes"), std::string::npos)
      << errorOf(bad);
}

TEST(Schedule, UnitsAreTheModelsInOrder) {
  json j = explicitPlan(0, 1);
  j["schedule"]["units"].erase(2);
  EXPECT_EQ(errorOf(j), "p.json: schedule.units: expected 4 units (embedding, "
                        "2 decoder layers, head), got 3");
  j = explicitPlan(0, 1);
  j["schedule"]["units"][3] = {{"kind", "embedding"}};
  EXPECT_EQ(errorOf(j),
            "p.json: schedule.units[3].kind: unit 3 must be the head");
  j = explicitPlan(0, 1);
  j["schedule"]["units"][2]["layer"] = 0;
  EXPECT_EQ(errorOf(j),
            "p.json: schedule.units[2].layer: unit 2 is decoder layer 1");
}

// A violation names the entry by index, so swift-verify-schedule can point
// at the op that breaks the rule.
TEST(Schedule, ViolationsNameTheEntry) {
  Plan p = parsePlanText(basePlan(3, 2).dump(), "p");
  Schedule s = p.schedule;
  ASSERT_FALSE(checkSchedule(p.model, p.strategy, s));
  s.backward[0].release.push_back(1); // the head's step releases layer 0
  std::optional<ScheduleViolation> v = checkSchedule(p.model, p.strategy, s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->part, ScheduleViolation::Part::Backward);
  EXPECT_EQ(v->entry, 0);
  EXPECT_EQ(v->field, "release");
  EXPECT_EQ(v->item, 2); // after the head's own and the tied table's
  EXPECT_EQ(v->path(), "backward[0].release");
  EXPECT_EQ(v->why, "unit 1 is not gathered");

  s = p.schedule;
  s.optimizer.device = OptimizerDevice::Accelerator;
  StrategyConfig offload = p.strategy;
  offload.offload = Offload::Optimizer;
  v = checkSchedule(p.model, offload, s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->path(), "optimizer.device");
  offload.zero = 0;
  v = checkSchedule(p.model, offload, s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->why, "offload needs zero >= 1 (the host optimizer updates "
                    "shards)");
}

// What the IR shows beyond plan.json: prefetch positions and bucket sizes.
TEST(Schedule, BuiltScheduleCarriesPrefetchPositionsAndBucketBytes) {
  Plan p = parsePlanText(basePlan(3, 2).dump(), "p"); // 2 layers, tied
  BuiltSchedule b =
      buildSchedule(p.model, p.strategy, unitParameterCounts(p.model));
  EXPECT_EQ(planToJson(p), [&] {
    Plan q = p;
    q.schedule = b.schedule;
    return planToJson(q);
  }());
  // Forward step 2 gathers layer 1 (its own) and the head and the tied
  // table, one unit ahead; step 3 the head and the table for itself.
  EXPECT_EQ(b.schedule.forward[2].gather, (std::vector<int>{2, 3, 0}));
  EXPECT_EQ(b.forwardAhead,
            (std::vector<std::vector<int>>{{0, 1}, {0, 1}, {0, 1, 1}, {0, 0}}));
  EXPECT_EQ(b.backwardAhead,
            (std::vector<std::vector<int>>{{0, 0, 1}, {0, 1}, {0}, {}}));
  int64_t bytes = 0;
  for (int64_t x : b.bucketBytes)
    bytes += x;
  EXPECT_EQ(bytes, p.model.numParameters() * kBucketBytesPerParameter);
  EXPECT_EQ(b.bucketBytes.size(), b.schedule.buckets.size());
}

} // namespace
