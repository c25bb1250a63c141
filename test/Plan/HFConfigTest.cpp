//===- HFConfigTest.cpp - the HF config.json reader (swift/Plan/HFConfig.h) ===//
//
// The one reader of HF config.json that swift-plan (through the job reader)
// and swift-run (a --weights directory's config) share: what it makes of
// the committed tiny HF directories, the bias/norm layout per model_type,
// errors with the field and its line and column, and hfDifferences(), the
// comparison swift-run makes with a plan's model.
//
//===----------------------------------------------------------------------===//
#include "swift/Plan/HFConfig.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace swift::plan;
using nlohmann::json;

namespace {

const std::string kData = SWIFT_TEST_DATA_DIR "/hf/";

/// The smallest config.json the reader accepts, with `extra` merged in.
json config(const json &extra = json::object()) {
  json c = {{"model_type", "llama"},       {"hidden_size", 64},
            {"intermediate_size", 128},    {"num_hidden_layers", 2},
            {"num_attention_heads", 4},    {"vocab_size", 256}};
  c.update(extra);
  return c;
}

HFConfig read(const json &j) { return readHFConfig(j, "config.json"); }

/// The JsonError reading `text` gives ("" field and no message: none).
JsonError errorOf(const std::string &text) {
  JsonPositions positions;
  try {
    readHFConfig(parseJson(text, "c.json", &positions), "c.json", &positions);
  } catch (const JsonError &e) {
    return e;
  }
  return JsonError("", "", "");
}

TEST(HFConfig, ReadsTheCommittedDirectories) {
  HFConfig llama = readHFConfigFile(kData + "llama/config.json");
  EXPECT_EQ(llama.modelType, "llama");
  EXPECT_EQ(llama.model.hiddenSize, 64);
  EXPECT_EQ(llama.model.numKvHeads, 2);
  EXPECT_EQ(llama.model.headDim, 16);
  EXPECT_FALSE(llama.model.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(llama.model.rmsNormEps, 1e-5);
  // transformers 5's rope_parameters: the scaling and rope_theta inside.
  EXPECT_DOUBLE_EQ(llama.model.ropeTheta, 10000);
  EXPECT_EQ(llama.ropeThetaField, "rope_parameters.rope_theta");
  EXPECT_EQ(llama.ropeScalingField, "rope_parameters");
  EXPECT_EQ(llama.model.ropeScaling.type, RopeType::Llama3);
  EXPECT_DOUBLE_EQ(llama.model.ropeScaling.factor, 8);
  EXPECT_EQ(llama.model.ropeScaling.originalMaxPositionEmbeddings, 32);
  EXPECT_FALSE(llama.model.qkvBias || llama.model.oBias || llama.model.qkNorm);
  EXPECT_EQ(llama.maxPositionEmbeddings->value, 128);
  EXPECT_EQ(llama.maxPositionEmbeddings->field, "max_position_embeddings");

  HFConfig qwen2 = readHFConfigFile(kData + "qwen2/config.json");
  EXPECT_TRUE(qwen2.model.qkvBias);
  EXPECT_FALSE(qwen2.model.oBias);
  EXPECT_TRUE(qwen2.model.tieWordEmbeddings);
  EXPECT_DOUBLE_EQ(qwen2.model.ropeTheta, 1e6);
  EXPECT_EQ(qwen2.model.ropeScaling.type, RopeType::Default);
  EXPECT_FALSE(qwen2.slidingWindow); // use_sliding_window: false

  HFConfig qwen3 = readHFConfigFile(kData + "qwen3/config.json");
  EXPECT_TRUE(qwen3.model.qkNorm);
  EXPECT_FALSE(qwen3.model.qkvBias);

  HFConfig mistral = readHFConfigFile(kData + "mistral/config.json");
  EXPECT_EQ(mistral.model.ropeScaling.type, RopeType::Linear);
  EXPECT_DOUBLE_EQ(mistral.model.ropeScaling.factor, 2);
  EXPECT_FALSE(mistral.slidingWindow); // sliding_window: null
}

// Each model_type's biases and norms, as transformers builds them.
TEST(HFConfig, LayoutFollowsTheModelType) {
  const json biases = {{"attention_bias", true}, {"mlp_bias", true}};
  auto layout = [&](const char *type) {
    json extra = biases;
    extra["model_type"] = type;
    const HFConfig c = read(config(extra));
    return std::string(c.model.qkvBias ? "qkv " : "") +
           (c.model.oBias ? "o " : "") + (c.mlpBias ? "mlp " : "") +
           (c.model.qkNorm ? "norm" : "");
  };
  // Llama: attention_bias on q, k, v and o; mlp_bias on gate/up/down.
  EXPECT_EQ(layout("llama"), "qkv o mlp ");
  // Qwen3: attention_bias as Llama's, q/k norms, an MLP without biases.
  EXPECT_EQ(layout("qwen3"), "qkv o norm");
  // Qwen2: q/k/v biases and no o bias whatever attention_bias says, an MLP
  // without biases (the job reader once kept mlp_bias for qwen2).
  EXPECT_EQ(layout("qwen2"), "qkv ");
  // Mistral: no biases at all.
  EXPECT_EQ(layout("mistral"), "");
  EXPECT_EQ(read(config({{"model_type", "qwen2"}})).model.qkvBias, true);
  EXPECT_EQ(read(config()).model.qkvBias, false);
}

TEST(HFConfig, DefaultsAndHeadDim) {
  HFConfig c = read(config());
  EXPECT_EQ(c.model.numKvHeads, 4);
  EXPECT_EQ(c.model.headDim, 16); // hidden_size / num_attention_heads
  EXPECT_DOUBLE_EQ(c.model.rmsNormEps, 1e-6);
  EXPECT_DOUBLE_EQ(c.model.ropeTheta, 10000);
  EXPECT_EQ(c.ropeScalingField, "");
  EXPECT_FALSE(c.maxPositionEmbeddings);
  // Given, head_dim need not divide hidden_size.
  EXPECT_EQ(read(config({{"head_dim", 32}})).model.headDim, 32);
  // transformers < 4.45 spelled rope_type "type"; null scaling is none.
  EXPECT_EQ(read(config({{"rope_scaling", {{"type", "linear"}, {"factor", 4}}}}))
                .model.ropeScaling.type,
            RopeType::Linear);
  EXPECT_EQ(read(config({{"rope_scaling", nullptr}})).model.ropeScaling.type,
            RopeType::Default);
}

TEST(HFConfig, SlidingWindowsWhereHFAppliesThem) {
  const json window = {{"sliding_window", 64}, {"use_sliding_window", true}};
  auto slides = [&](const json &extra) {
    json fields = window;
    fields.update(extra);
    return read(config(fields)).slidingWindow.has_value();
  };
  EXPECT_TRUE(slides({{"model_type", "mistral"}}));
  EXPECT_FALSE(slides({{"model_type", "llama"}}));
  EXPECT_TRUE(slides({{"model_type", "qwen2"}}));
  // qwen2/qwen3: on the layers layer_types marks, else from
  // max_window_layers on.
  EXPECT_FALSE(slides({{"model_type", "qwen3"},
                       {"layer_types", {"full_attention", "full_attention"}}}));
  EXPECT_TRUE(slides({{"model_type", "qwen3"},
                      {"layer_types", {"full_attention", "sliding_attention"}}}));
  EXPECT_FALSE(slides({{"model_type", "qwen2"}, {"max_window_layers", 2}}));
  EXPECT_TRUE(slides({{"model_type", "qwen2"}, {"max_window_layers", 1}}));
  EXPECT_FALSE(slides({{"model_type", "qwen2"}, {"use_sliding_window", false}}));
}

// Errors name the field, and with parseJson's positions its line and column
// (or those of the object that lacks it).
TEST(HFConfig, ErrorsNameTheFieldAndItsPlace) {
  JsonError e = errorOf("{\"model_type\": \"gpt2\"}");
  EXPECT_EQ(e.field, "model_type");
  EXPECT_EQ(e.why, "unsupported model_type 'gpt2'; supported: llama, qwen2, "
                   "mistral, qwen3 (decoder-only Llama-family models)");
  EXPECT_EQ(e.at.line, 1);
  EXPECT_EQ(e.at.column, 16);
  EXPECT_EQ(std::string(e.what()), "c.json: model_type: " + e.why);

  json c = config();
  c.erase("vocab_size");
  e = errorOf(c.dump(1));
  EXPECT_EQ(e.field, "vocab_size");
  EXPECT_EQ(e.why, "missing; an HF model config needs it");
  EXPECT_EQ(e.at.line, 1);
  EXPECT_EQ(e.at.column, 1);

  // A quoted boolean is a string (Python would read "no" as true).
  c = config({{"tie_word_embeddings", "no"}});
  e = errorOf(c.dump(1));
  EXPECT_EQ(e.field, "tie_word_embeddings");
  EXPECT_EQ(e.why, "expected true or false, got string \"no\"");
  EXPECT_GT(e.at.line, 1);

  e = errorOf(config({{"rope_scaling", {{"rope_type", "linear"}, {"factor", "2"}}}})
                  .dump(1));
  EXPECT_EQ(e.field, "rope_scaling.factor");
  EXPECT_EQ(e.why, "expected a number, got string \"2\"");
  e = errorOf(config({{"rope_parameters",
                       {{"rope_type", "llama3"}, {"factor", 8}}}})
                  .dump(1));
  EXPECT_EQ(e.field, "rope_parameters.low_freq_factor");
  EXPECT_EQ(e.why, "missing; rope type llama3 needs it");
  e = errorOf(config({{"rope_scaling", {{"type", "yarn"}, {"factor", 8}}}}).dump());
  EXPECT_EQ(e.field, "rope_scaling.type");
  EXPECT_NE(e.why.find("rope type 'yarn' is not supported"), std::string::npos);
  e = errorOf(config({{"rms_norm_eps", 0}}).dump());
  EXPECT_EQ(e.field, "rms_norm_eps");
  EXPECT_EQ(e.why, "value 0 out of range (0, 1]");
  e = errorOf(config({{"hidden_act", "gelu"}}).dump());
  EXPECT_EQ(e.field, "hidden_act");
  e = errorOf(config({{"head_dim", 15}}).dump());
  EXPECT_EQ(e.field, "head_dim");
  EXPECT_NE(e.why.find("odd"), std::string::npos);
  e = errorOf("[1]");
  EXPECT_EQ(e.why, "expected a JSON object (an HF config.json)");

  // Syntax errors, duplicate keys and deep nesting: where the parser stopped.
  e = errorOf("{\n  \"hidden_size\": [2048}\n}");
  EXPECT_EQ(e.at.line, 2);
  EXPECT_EQ(e.at.column, 23);
  EXPECT_EQ(e.why.rfind("not valid JSON: syntax error", 0), 0u) << e.why;
  e = errorOf("{\"a\": 1,\n  \"a\": 2}");
  EXPECT_EQ(e.field, "a");
  EXPECT_EQ(e.at.line, 2);
  EXPECT_EQ(e.at.column, 3);
  e = errorOf("{\"model_type\": " + std::string(300, '[') + std::string(300, ']') +
              "}");
  EXPECT_EQ(e.why, "nested deeper than 256 levels");
  EXPECT_EQ(e.at.column, 16 + 255);
}

TEST(Json, PositionsOfValues) {
  JsonPositions p;
  parseJson("{\"a\": [1,  2 ,3],\n \"b\": {\"c\": true}}", "f.json", &p);
  EXPECT_EQ(p.size(), 4u); // "", a, b, b.c
  auto at = [&](const std::string &field) {
    JsonPosition x = positionOf(p, field);
    return std::to_string(x.line) + ":" + std::to_string(x.column);
  };
  EXPECT_EQ(at(""), "1:1");
  EXPECT_EQ(at("a"), "1:7");
  EXPECT_EQ(at("a[1]"), "1:7"); // an element: its array's
  EXPECT_EQ(at("b"), "2:7");
  EXPECT_EQ(at("b.c"), "2:13");
  // An absent field: where its nearest enclosing value starts.
  EXPECT_EQ(at("b.d"), "2:7");
  EXPECT_EQ(at("x.y[3]"), "1:1");
}

/// The plan's model for `c` written as plan.json and read back.
ModelConfig planned(const HFConfig &c) {
  json plan = {{"schema", "swift.plan"},
               {"version", 1},
               {"model", json::parse(modelToJson(c.model))},
               {"training",
                {{"sequence_length", 32},
                 {"global_batch_size", 2},
                 {"micro_batch_size", 2},
                 {"gradient_accumulation", 1},
                 {"precision", "fp32"},
                 {"optimizer",
                  {{"lr", 1e-3}, {"betas", {0.9, 0.95}}, {"eps", 1e-8},
                   {"weight_decay", 0.0}}}}},
               {"world", {{"size", 1}}},
               {"strategy",
                {{"zero", 0}, {"offload", "none"}, {"checkpointing", "none"}}}};
  return parsePlanText(plan.dump(), "p.json").model;
}

std::string differences(const HFConfig &c, const ModelConfig &m) {
  std::string out;
  for (const HFDifference &d : hfDifferences(c, m))
    out += d.field + " " + d.there + " / " + d.planField + " " + d.plan + "; ";
  return out;
}

// What swift-run compares: a plan made from a config agrees with it, also
// through plan.json's text and an IR float; real differences are named.
TEST(HFConfig, DifferencesFromAPlansModel) {
  for (const char *dir : {"llama", "qwen2", "qwen3", "mistral", "llama-sharded"}) {
    HFConfig c = readHFConfigFile(kData + dir + "/config.json");
    EXPECT_EQ(differences(c, planned(c)), "") << dir;
    ModelConfig rounded = c.model; // as an f32 attribute of the IR keeps them
    rounded.rmsNormEps = double(float(rounded.rmsNormEps));
    rounded.ropeTheta = double(float(rounded.ropeTheta)) * (1 + 1e-7);
    rounded.ropeScaling.factor = double(float(rounded.ropeScaling.factor));
    EXPECT_EQ(differences(c, rounded), "") << dir;
  }
  const HFConfig llama = readHFConfigFile(kData + "llama/config.json");
  ModelConfig m = llama.model;
  m.ropeTheta = 500000;
  EXPECT_EQ(differences(llama, m), "rope_parameters.rope_theta 10000 / "
                                   "model.rope_theta 500000; ");
  m = llama.model;
  m.ropeTheta *= 1 + 2e-5; // more than a round trip
  EXPECT_NE(differences(llama, m), "");
  m = llama.model;
  m.rmsNormEps = 1e-6;
  EXPECT_EQ(differences(llama, m), "rms_norm_eps 1e-05 / model.rms_norm_eps 1e-06; ");
  m = llama.model;
  m.ropeScaling.factor = 4;
  EXPECT_EQ(differences(llama, m),
            "rope_parameters.factor 8 / model.rope_scaling.factor 4; ");
  m = llama.model;
  m.ropeScaling.originalMaxPositionEmbeddings = 8192;
  EXPECT_EQ(differences(llama, m),
            "rope_parameters.original_max_position_embeddings 32 / "
            "model.rope_scaling.original_max_position_embeddings 8192; ");
  m = llama.model;
  m.ropeScaling = RopeScaling{};
  EXPECT_EQ(differences(llama, m), "rope_parameters.rope_type llama3 / "
                                   "model.rope_scaling.rope_type default (no "
                                   "rope_scaling); ");
  m = llama.model;
  m.tieWordEmbeddings = true;
  EXPECT_EQ(differences(llama, m),
            "tie_word_embeddings false / model.tie_word_embeddings true; ");
  m = llama.model;
  m.qkvBias = m.oBias = true;
  EXPECT_EQ(differences(llama, m),
            "attention_bias false / model.attention_qkv_bias true; "
            "attention_bias false / model.attention_o_bias true; ");
  // Head layouts with the same shapes: 8 heads of 8 against 4 of 16.
  m = llama.model;
  m.numHeads = 8;
  m.numKvHeads = 4;
  m.headDim = 8;
  EXPECT_EQ(differences(llama, m),
            "num_attention_heads 4 / model.num_attention_heads 8; "
            "num_key_value_heads 2 / model.num_key_value_heads 4; "
            "head_dim 16 / model.head_dim 8; ");
  // The model_type decides Qwen2's biases and Qwen3's norms.
  const HFConfig qwen2 = readHFConfigFile(kData + "qwen2/config.json");
  m = qwen2.model;
  m.qkvBias = false;
  EXPECT_EQ(differences(qwen2, m), "model_type qwen2 (attention_qkv_bias true) / "
                                   "model.attention_qkv_bias false; ");
  const HFConfig qwen3 = readHFConfigFile(kData + "qwen3/config.json");
  m = qwen3.model;
  m.qkNorm = false;
  EXPECT_EQ(differences(qwen3, m),
            "model_type qwen3 (qk_norm true) / model.qk_norm false; ");
  // A config without rope_scaling against a plan with one.
  HFConfig plain = read(config());
  m = plain.model;
  m.ropeScaling.type = RopeType::Linear;
  m.ropeScaling.factor = 2;
  EXPECT_EQ(differences(plain, m), "rope_scaling.rope_type absent (default) / "
                                   "model.rope_scaling.rope_type linear; ");
}

} // namespace
