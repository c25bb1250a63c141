//===- LoraTest.cpp - LoRA in swift-run: adapters over a frozen base ------===//
//
// swift-run on a LoRA plan (training.method lora), end to end on CPU: the
// adapters start at B = 0, so the first step's loss is the base model's;
// world 2 at ZeRO 2 and 3 (with offload) reproduces world 1; a resumed run
// equals a straight one bit for bit; the peft adapter swift-run writes
// starts an identical run; the merged export (--merge) is the model the
// adapters trained (its loss equals the LoRA run's on the same batch); a
// mismatched adapter is refused before training.
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include "swift/Runtime/io/SafeTensors.h"

#include <tuple>

using namespace swift::rt::testing;

namespace {

json loraPlan(int zero, int world, const std::string &offload = "none") {
  json p = tinyPlan(zero, world);
  p["strategy"]["offload"] = offload;
  return withLora(p);
}

std::string nproc(int world) {
  return " --nproc-per-node " + std::to_string(world);
}

/// GBS (8) samples of 33 tokens: every step reads the same 8 windows.
std::string fixedBatch() {
  std::string path = freshDir() + "/batch.jsonl";
  std::ofstream out(path);
  unsigned x = 7;
  for (int i = 0; i < 8; ++i) {
    json ids = json::array();
    for (int k = 0; k < 32; ++k) {
      x = x * 1103515245u + 12345u;
      ids.push_back((x >> 8) % 256);
    }
    out << json{{"input_ids", ids}}.dump() << "\n";
  }
  return path;
}

} // namespace

TEST(Lora, StartsAtTheBaseModelAndTrainsOnlyAdapters) {
  // Same seed, same base: LoRA's B = 0 leaves the first loss the full
  // model's; then it trains (the loss moves) while a full run moves more.
  Result full = runPlan(tinyPlan(0, 1), "--steps 3");
  Result lora = runPlan(loraPlan(0, 1), "--steps 3 --save-params p.bin");
  ASSERT_EQ(full.exitCode, 0) << full.output;
  ASSERT_EQ(lora.exitCode, 0) << lora.output;
  EXPECT_EQ(lora.losses()[0], full.losses()[0]);
  EXPECT_NE(lora.losses()[2], lora.losses()[0]);
  EXPECT_NE(lora.losses()[2], full.losses()[2]);
  // --save-params holds the trainable parameters: 2 layers x 7 adapters x
  // (A + B) of rank 4.
  const int64_t C = 64, I = 128, Q = 64, KV = 32, r = 4;
  const int64_t perLayer = r * (C + Q) + r * (C + KV) * 2 + r * (Q + C) +
                           r * (C + I) * 2 + r * (I + C);
  EXPECT_EQ(int64_t(readParams(lora.dir + "/p.bin").size()), 2 * perLayer);
  EXPECT_NE(lora.output.find("gradients 32768 B"), std::string::npos)
      << lora.output; // fp32 gradients of the adapters only
}

TEST(Lora, WorldTwoAtZeroTwoAndThreeReproducesWorldOne) {
  // Another world size sums the micro-batches' gradients in another order;
  // AdamW's normalization magnifies those roundings where a gradient is
  // near zero (B starts at 0, so A's first gradients are): the adapters
  // differ by up to ~2e-6 after 3 steps of lr 1e-3 (a dropped or doubled
  // rank's gradient moves them by ~1e-3).
  constexpr double kAdapterTol = 5e-6;
  Result ref = runPlan(loraPlan(0, 1), "--steps 3 --save-params p.bin");
  for (auto [zero, offload] : {std::pair<int, const char *>{2, "optimizer"},
                               {3, "none"},
                               {3, "optimizer+params"}}) {
    Result got = runPlan(loraPlan(zero, 2, offload),
                         "--steps 3 --save-params p.bin" + nproc(2));
    expectSameLosses(ref, got, kLossTol,
                     "zero " + std::to_string(zero) + " " + offload);
    EXPECT_LT(maxAbsDiff(readParams(ref.dir + "/p.bin"),
                         readParams(got.dir + "/p.bin")),
              kAdapterTol);
  }
}

TEST(Lora, ResumesBitForBit) {
  for (int world : {1, 2}) {
    json p = loraPlan(world == 1 ? 0 : 3, world);
    p["training"]["max_grad_norm"] = 0.5;
    Result straight = runPlan(p, "--steps 4 --save-params p.bin" + nproc(world));
    Result first = runPlan(p, "--steps 2 --save-dir ckpt" + nproc(world));
    ASSERT_EQ(first.exitCode, 0) << first.output;
    Result resumed = runPlan(p, "--steps 4 --save-params p.bin --resume " +
                                    first.dir + "/ckpt" + nproc(world));
    ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
    ASSERT_EQ(resumed.metrics.size(), 2u);
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(resumed.metrics[size_t(i)].at("loss").get<double>(),
                straight.metrics[size_t(i + 2)].at("loss").get<double>());
    EXPECT_EQ(slurp(straight.dir + "/p.bin"), slurp(resumed.dir + "/p.bin"));
    // A LoRA checkpoint does not resume a full run.
    Result wrong = runPlan(tinyPlan(0, 1), "--steps 4 --resume " + first.dir +
                                               "/ckpt");
    EXPECT_EQ(wrong.exitCode, 2) << wrong.output;
    EXPECT_NE(wrong.output.find("a checkpoint of another model: trains"),
              std::string::npos)
        << wrong.output;
  }
}

TEST(Lora, PeftAdapterOutAndInAndMergedModel) {
  const std::string data = fixedBatch();
  json p = loraPlan(0, 1);
  // The base as an HF directory, so the merged model has a config.json.
  Result base = runPlan(tinyPlan(0, 1), "--steps 0 --export-hf model --export-dtype fp32");
  ASSERT_EQ(base.exitCode, 0) << base.output;
  const std::string weights = " --weights " + base.dir + "/model";
  // The initial adapters, written as peft writes them.
  Result init = runPlan(p, "--steps 0 --export-hf adapter --export-dtype fp32" + weights);
  ASSERT_EQ(init.exitCode, 0) << init.output;
  json config = json::parse(slurp(init.dir + "/adapter/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["lora_alpha"], 8.0);
  EXPECT_EQ(config["target_modules"].size(), 7u);
  EXPECT_TRUE(fs::exists(init.dir + "/adapter/adapter_model.safetensors"));
  // Seeded adapters vs the same adapters read back: the same run.
  Result seeded = runPlan(p, "--steps 4 --data " + data + weights +
                                 " --export-hf merged --merge --export-dtype fp32");
  Result loaded = runPlan(p, "--steps 3 --data " + data + weights +
                                 " --adapter " + init.dir + "/adapter");
  ASSERT_EQ(seeded.exitCode, 0) << seeded.output;
  ASSERT_EQ(loaded.exitCode, 0) << loaded.output;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(seeded.losses()[size_t(i)], loaded.losses()[size_t(i)]);
  // The merged model (after 4 updates) is a full model: trained fully from
  // it, its first loss is that of the LoRA model after 4 updates on the
  // same batch, i.e. LoRA's 5th step.
  Result five = runPlan(p, "--steps 5 --data " + data + weights);
  Result merged = runPlan(tinyPlan(0, 1), "--steps 1 --data " + data +
                                              " --weights " + seeded.dir + "/merged");
  ASSERT_EQ(five.exitCode, 0) << five.output;
  ASSERT_EQ(merged.exitCode, 0) << merged.output;
  EXPECT_NEAR(merged.losses()[0], five.losses()[4], 1e-5);
  EXPECT_GT(std::fabs(five.losses()[4] - five.losses()[0]), 1e-4);
}

TEST(Lora, AResumeFindsTheBaseItTrainedOn) {
  // Trained with --weights; resumed without: the checkpoint names its base,
  // so the resume continues exactly. Resumed with another base: refused.
  Result base = runPlan(tinyPlan(0, 1), "--steps 0 --export-hf model --export-dtype fp32");
  json other = tinyPlan(0, 1);
  other["training"]["seed"] = 99;
  Result otherBase = runPlan(other, "--steps 0 --export-hf model --export-dtype fp32");
  ASSERT_EQ(base.exitCode, 0) << base.output;
  ASSERT_EQ(otherBase.exitCode, 0) << otherBase.output;
  json p = loraPlan(0, 1);
  const std::string weights = " --weights " + base.dir + "/model";
  Result straight = runPlan(p, "--steps 4 --save-params p.bin" + weights);
  Result first = runPlan(p, "--steps 2 --save-dir ckpt" + weights);
  ASSERT_EQ(first.exitCode, 0) << first.output;
  Result resumed = runPlan(p, "--steps 4 --save-params p.bin --resume " + first.dir + "/ckpt");
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_EQ(slurp(resumed.dir + "/p.bin"), slurp(straight.dir + "/p.bin"));
  EXPECT_EQ(resumed.losses()[1], straight.losses()[3]);
  Result wrong = runPlan(p, "--steps 4 --resume " + first.dir + "/ckpt --weights " +
                                otherBase.dir + "/model");
  EXPECT_EQ(wrong.exitCode, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("this LoRA checkpoint trained on the base"),
            std::string::npos)
      << wrong.output;
}

TEST(Lora, DropoutMasksArePerSampleNotPerRank) {
  // lora.dropout 0.1: the masks depend on (seed, sample, layer), so world 2
  // at ZeRO-3 and a fully checkpointed run (which recomputes the layer in
  // backward) train exactly as world 1 does; a resumed run continues them;
  // and dropout changes the training.
  json p = loraPlan(0, 1);
  p["training"]["lora"]["dropout"] = 0.1;
  Result ref = runPlan(p, "--steps 4 --save-params p.bin");
  Result none = runPlan(loraPlan(0, 1), "--steps 4");
  ASSERT_EQ(ref.exitCode, 0) << ref.output;
  EXPECT_EQ(ref.losses()[0], none.losses()[0]); // B = 0: no delta yet
  EXPECT_NE(ref.losses()[3], none.losses()[3]);
  json w2 = loraPlan(3, 2);
  w2["training"]["lora"]["dropout"] = 0.1;
  Result two = runPlan(w2, "--steps 4 --save-params p.bin" + nproc(2));
  expectSameLosses(ref, two, kLossTol, "world 2 zero 3");
  EXPECT_LT(maxAbsDiff(readParams(ref.dir + "/p.bin"), readParams(two.dir + "/p.bin")),
            kParamTol);
  json ck = p;
  ck["strategy"]["checkpointing"] = "full";
  Result full = runPlan(ck, "--steps 4 --save-params p.bin");
  ASSERT_EQ(full.exitCode, 0) << full.output;
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(full.losses()[size_t(i)], ref.losses()[size_t(i)]);
  Result first = runPlan(p, "--steps 2 --save-dir ckpt");
  Result resumed = runPlan(p, "--steps 4 --save-params p.bin --resume " +
                                  first.dir + "/ckpt");
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_EQ(slurp(resumed.dir + "/p.bin"), slurp(ref.dir + "/p.bin"));
}

TEST(Lora, MismatchedAdaptersAndOptionsAreRefused) {
  json p = loraPlan(0, 1);
  Result init = runPlan(p, "--steps 0 --export-hf adapter");
  ASSERT_EQ(init.exitCode, 0) << init.output;
  json other = p;
  other["training"]["lora"]["rank"] = 8;
  Result r = runPlan(other, "--steps 1 --adapter " + init.dir + "/adapter");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("adapter_config.json: r: 4, but the plan's lora rank is 8"),
            std::string::npos)
      << r.output;
  json fewer = p;
  fewer["training"]["lora"]["targets"] = {"q_proj", "v_proj"};
  r = runPlan(fewer, "--steps 1 --adapter " + init.dir + "/adapter");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("adapts q_proj, k_proj, v_proj, o_proj, gate_proj, "
                          "up_proj, down_proj, but the plan's lora targets are "
                          "q_proj, v_proj"),
            std::string::npos)
      << r.output;
  r = runPlan(tinyPlan(0, 1), "--steps 1 --merge --export-hf x");
  EXPECT_EQ(r.exitCode, 2) << r.output;
}

TEST(Lora, AdapterConfigFieldsThatChangeTheMathAreHonouredOrRefused) {
  // peft's LoraConfig fields that change what the adapters compute were
  // ignored: each is the plan's, or the run exits 2 naming it.
  const json p = loraPlan(0, 1);
  Result init = runPlan(p, "--steps 0 --export-hf adapter");
  ASSERT_EQ(init.exitCode, 0) << init.output;
  const std::string adapter = init.dir + "/adapter";
  const json config = json::parse(slurp(adapter + "/adapter_config.json"));
  // The adapter with its config's `field` set to `value` (null: removed).
  auto with = [&](const std::vector<std::pair<std::string, json>> &fields) {
    const std::string dir = freshDir() + "/adapter";
    fs::copy(adapter, dir);
    json c = config;
    for (const auto &[field, value] : fields)
      c[field] = value;
    std::ofstream(dir + "/adapter_config.json", std::ios::trunc) << c.dump(2);
    return dir;
  };
  struct Case {
    std::vector<std::pair<std::string, json>> fields;
    std::string message; // empty: accepted
  };
  const std::vector<Case> cases = {
      {{{"alpha_pattern", {{"q_proj", 16}}}},
       "alpha_pattern[\"q_proj\"]: 16, but lora_alpha is 8.0: swift-run gives "
       "every adapted linear the plan's one lora_alpha"},
      {{{"rank_pattern", {{"v_proj", 8}}}},
       "rank_pattern[\"v_proj\"]: 8, but r is 4: swift-run gives every "
       "adapted linear the plan's one r"},
      {{{"rank_pattern", {{"v_proj", 4}}}, {"alpha_pattern", {{"k_proj", 8}}}},
       ""}, // the defaults again
      {{{"layers_to_transform", {0}}},
       "target_modules: [\"q_proj\",\"k_proj\",\"v_proj\",\"o_proj\",\"gate_proj\","
       "\"up_proj\",\"... adapts q_proj in 1 of the 2 layers"},
      {{{"layers_to_transform", {1, 0}}, {"layers_pattern", "layers"}}, ""},
      {{{"layers_to_transform", {0, 1}}, {"layers_pattern", "h"}},
       "adapts none, but the plan's lora targets are q_proj"},
      {{{"exclude_modules", {"model.layers.1.mlp.down_proj"}}},
       "adapts down_proj in 1 of the 2 layers"},
      {{{"fan_in_fan_out", true}},
       "fan_in_fan_out: true: the adapter is for linears stored (in, out)"},
      {{{"bias", "all"}}, "bias: \"all\": the adapter trains biases too"},
      {{{"bias", "none"}, {"fan_in_fan_out", false}, {"modules_to_save", json::array()}},
       ""},
      {{{"modules_to_save", {"lm_head"}}},
       "modules_to_save: [\"lm_head\"]: those modules train fully beside the "
       "adapters"},
      {{{"target_modules", {"q_proj", "v_proj"}}},
       "target_modules: [\"q_proj\",\"v_proj\"] adapts q_proj, v_proj, but the "
       "plan's lora targets are q_proj, k_proj, v_proj, o_proj, gate_proj, "
       "up_proj, down_proj (plan the job with the adapter's targets)"},
      {{{"target_modules", "all-linear"}}, ""},
      {{{"target_modules", R"(model\.layers\.\d+\.(self_attn|mlp)\.\w+_proj)"}}, ""},
      {{{"target_modules", R"(.*\.(q|v)_proj)"}},
       "adapts q_proj, v_proj, but the plan's lora targets are"},
      {{{"target_modules", "(?P<x>q_proj)"}},
       "not a regular expression swift-run can evaluate"},
      {{{"target_modules", {"self_attn.q_proj", "k_proj", "v_proj", "o_proj",
                            "mlp.gate_proj", "up_proj", "down_proj", "lm_head"}}},
       "adapts lm_head; swift-run adapts the decoder's linears only"},
      {{{"use_rslora", true}}, "use_rslora: true: rsLoRA scales by lora_alpha / sqrt(r)"},
      {{{"init_lora_weights", "pissa"}},
       "init_lora_weights: \"pissa\": initialisations other than true"},
      {{{"init_lora_weights", "gaussian"}}, ""},
      {{{"task_type", "SEQ_CLS"}}, "task_type: \"SEQ_CLS\": an adapter for another head"},
      {{{"lora_bias", true}}, "lora_bias: true: lora_B has a bias"},
      {{{"some_future_field", 3}},
       "some_future_field: a field swift-run does not know, set to 3"},
      {{{"some_future_field", nullptr}, {"lora_dropout", 0.3}}, ""},
  };
  for (const Case &c : cases) {
    Result r = runPlan(p, "--steps 1 --adapter " + with(c.fields));
    const std::string what = json(c.fields).dump();
    if (c.message.empty()) {
      EXPECT_EQ(r.exitCode, 0) << what << "\n" << r.output;
      continue;
    }
    EXPECT_EQ(r.exitCode, 2) << what << "\n" << r.output;
    EXPECT_NE(r.output.find("adapter_config.json: "), std::string::npos)
        << what << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << what << "\n" << r.output;
    EXPECT_TRUE(r.metrics.empty()) << what;
  }
  // Strict JSON: a key given twice is refused (the last copy won).
  const std::string dir = with({});
  std::string text = slurp(dir + "/adapter_config.json");
  text.insert(text.find('{') + 1, "\n  \"lora_alpha\": 16,");
  std::ofstream(dir + "/adapter_config.json", std::ios::trunc) << text;
  Result r = runPlan(p, "--steps 1 --adapter " + dir);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("the key \"lora_alpha\" is given twice"),
            std::string::npos)
      << r.output;
}

TEST(Qlora, AStepIsALoraStepOnTheDequantizedBase) {
  // QLoRA from base W against LoRA from dequantize(quantize(W)) (written by
  // a QLoRA run's merged export before any step: B = 0, so the base
  // exactly): the same losses and adapters, bit for bit, at ZeRO 0, and at
  // world 2: ZeRO-2 + offload with full checkpointing (the base dequantized
  // again in backward), ZeRO-3 (the NF4 bytes sharded and gathered) with
  // selective checkpointing, and ZeRO-3 with the shards on the host.
  Result base = runPlan(tinyPlan(0, 1), "--steps 0 --export-hf model --export-dtype fp32");
  ASSERT_EQ(base.exitCode, 0) << base.output;
  const std::string weights = " --weights " + base.dir + "/model";
  json q = loraPlan(0, 1);
  q["training"]["method"] = "qlora";
  Result deq = runPlan(q, "--steps 0 --export-hf deq --merge --export-dtype fp32" + weights);
  ASSERT_EQ(deq.exitCode, 0) << deq.output;
  for (auto [zero, world, ckpt, offload] :
       {std::tuple<int, int, const char *, const char *>{0, 1, "none", "none"},
        {2, 2, "full", "optimizer"},
        {3, 2, "selective", "none"},
        {3, 2, "full", "optimizer+params"}}) {
    json l = loraPlan(zero, world, offload);
    l["strategy"]["checkpointing"] = ckpt;
    json ql = l;
    ql["training"]["method"] = "qlora";
    Result lora = runPlan(l, "--steps 3 --save-params p.bin --weights " + deq.dir +
                                 "/deq" + nproc(world));
    Result qlora = runPlan(ql, "--steps 3 --save-params p.bin" + weights + nproc(world));
    ASSERT_EQ(lora.exitCode, 0) << lora.output;
    ASSERT_EQ(qlora.exitCode, 0) << qlora.output;
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(qlora.losses()[size_t(i)], lora.losses()[size_t(i)]) << "step " << i + 1;
    EXPECT_EQ(slurp(qlora.dir + "/p.bin"), slurp(lora.dir + "/p.bin"));
  }
  // The quantized base is not the base: the losses differ from LoRA's on W.
  Result onW = runPlan(loraPlan(0, 1), "--steps 1" + weights);
  Result qOnW = runPlan(q, "--steps 1" + weights);
  EXPECT_NE(onW.losses()[0], qOnW.losses()[0]);
}

/// Tensor `name` of the HF directory `dir`, as fp32.
std::vector<float> tensorOf(const std::string &dir, const std::string &name) {
  swift::rt::safetensors::ModelWeights w(dir);
  auto [t, file] = w.find(name);
  if (!t)
    return {};
  std::vector<float> v(size_t(t->numel()));
  file->readF32(*t, 0, t->numel(), v.data());
  return v;
}

// --merge merges into the base as the run held it (QLoRA: the
// NF4-dequantized base, the model the adapters trained with);
// --merge-base DIR into DIR's weights as stored. Either export is dense:
// its config.json has no quantization_config (transformers would load the
// weights as quantized ones).
TEST(Qlora, MergeBaseMergesIntoTheOriginalWeightsAndTheExportIsDense) {
  Result base = runPlan(tinyPlan(0, 1), "--steps 0 --export-hf model --export-dtype fp32");
  ASSERT_EQ(base.exitCode, 0) << base.output;
  const std::string model = base.dir + "/model";
  json config = json::parse(slurp(model + "/config.json"));
  config["quantization_config"] = {{"quant_method", "bitsandbytes"},
                                   {"load_in_4bit", true}};
  std::ofstream(model + "/config.json") << config.dump(2);
  json q = loraPlan(0, 1);
  q["training"]["method"] = "qlora";
  q["training"]["lora"]["targets"] = {"q_proj"};
  const std::string run = "--steps 2 --export-hf merged --merge --export-dtype fp32 --weights " + model;
  Result trained = runPlan(q, run);
  Result original = runPlan(q, run + " --merge-base " + model);
  ASSERT_EQ(trained.exitCode, 0) << trained.output;
  ASSERT_EQ(original.exitCode, 0) << original.output;
  const std::string k = "model.layers.0.self_attn.k_proj.weight",
                    qp = "model.layers.0.self_attn.q_proj.weight";
  const std::vector<float> w = tensorOf(model, k);
  ASSERT_FALSE(w.empty());
  // Not adapted: the original weights bit for bit, or their NF4 round trip.
  EXPECT_EQ(tensorOf(original.dir + "/merged", k), w);
  EXPECT_GT(maxAbsDiff(tensorOf(trained.dir + "/merged", k), w), 1e-4);
  // Adapted: the original plus the same delta either way.
  const std::vector<float> q0 = tensorOf(model, qp),
                           qo = tensorOf(original.dir + "/merged", qp);
  EXPECT_GT(maxAbsDiff(qo, q0), 0.0);
  for (const std::string &dir : {trained.dir, original.dir}) {
    json exported = json::parse(slurp(dir + "/merged/config.json"));
    EXPECT_FALSE(exported.contains("quantization_config")) << dir;
  }
  // The merge base is checked before training, and --merge-base needs --merge.
  Result wrong = runPlan(q, run + " --merge-base " + base.dir);
  EXPECT_EQ(wrong.exitCode, 2) << wrong.output;
  EXPECT_TRUE(wrong.metrics.empty());
  Result alone = runPlan(q, "--steps 1 --export-hf x --merge-base " + model);
  EXPECT_EQ(alone.exitCode, 2) << alone.output;
  EXPECT_NE(alone.output.find("--merge-base needs --merge"), std::string::npos)
      << alone.output;
}
