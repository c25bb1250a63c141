//===- JobTest.cpp - the job reader: defaults, overrides, errors ----------===//

#include "TestUtil.h"
#include "swift/Job/Presets.h"

using namespace swift::job;
using namespace swift::job::testing;

namespace {

JobSpec load(const std::string &text, std::vector<std::string> sets = {}) {
  Diagnostic diag;
  auto job = loadJob(writeTemp(text), sets, diag);
  EXPECT_TRUE(job.has_value()) << diag.str();
  return job.value_or(JobSpec{});
}

Diagnostic fail(const std::string &text, std::vector<std::string> sets = {}) {
  Diagnostic diag;
  auto job = loadJob(writeTemp(text), sets, diag);
  EXPECT_FALSE(job.has_value());
  return diag;
}

TEST(Job, DefaultsFollowTheGpu) {
  JobSpec job = load(kBaseJob);
  EXPECT_EQ(job.cluster.nodes, 1);
  EXPECT_EQ(job.cluster.numGpus(), 8);
  EXPECT_EQ(job.cluster.intraNode.name, "nvlink4");
  EXPECT_EQ(job.cluster.interNode.name, "ib-400g");
  EXPECT_EQ(job.training.precision, swift::plan::Precision::Bf16Mixed);
  EXPECT_FALSE(job.training.microBatchSize.has_value());
  EXPECT_FALSE(job.strategy.zero.has_value());
  EXPECT_EQ(job.backend, swift::plan::Backend::SwiftRun);

  JobSpec a10 = load(kBaseJob, {"cluster.gpu=a10"});
  EXPECT_EQ(a10.cluster.intraNode.name, "pcie4");
  EXPECT_DOUBLE_EQ(a10.cluster.gpu.memoryGiB, 24);
}

TEST(Job, SetOverridesNestedKeysInOrder) {
  JobSpec job = load(kBaseJob, {"strategy.zero=3", "strategy.offload=optimizer",
                                "training.micro_batch_size=2",
                                "training.micro_batch_size=4",
                                "cluster.interconnect.inter_node=ib-200g"});
  EXPECT_EQ(job.strategy.zero, 3);
  EXPECT_EQ(job.strategy.offload, swift::plan::Offload::Optimizer);
  EXPECT_EQ(job.training.microBatchSize, 4);
  EXPECT_EQ(job.cluster.interNode.name, "ib-200g");
  JobSpec comm = load(kBaseJob, {"strategy.bucket_mib=50", "strategy.prefetch_depth=2"});
  EXPECT_EQ(comm.strategy.bucketBytes, 50 << 20);
  EXPECT_EQ(comm.strategy.prefetchDepth, 2);
  EXPECT_EQ(fail(kBaseJob, {"strategy.prefetch_depth=0"}).field, "strategy.prefetch_depth");
}

TEST(Job, SetChangesOneFieldOfAPreset) {
  JobSpec job = load(kBaseJob, {"model.num_hidden_layers=2",
                                "cluster.gpu.memory_gib=40"});
  EXPECT_EQ(job.model.numHiddenLayers, 2);
  EXPECT_EQ(job.model.hiddenSize, 2048);
  EXPECT_EQ(job.model.headDim, 64);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.memoryGiB, 40);
  EXPECT_DOUBLE_EQ(job.cluster.gpu.bf16Tflops, 989.4);
}

TEST(Job, AutoMeansUndecided) {
  JobSpec job = load(std::string(kBaseJob) +
                     "strategy: {zero: auto, offload: auto, checkpointing: auto}\n");
  EXPECT_FALSE(job.strategy.zero);
  EXPECT_FALSE(job.strategy.offload);
  EXPECT_FALSE(job.strategy.checkpointing);
}

TEST(Job, InlineModelFollowsHFSemantics) {
  // HF llama's attention_bias puts biases on q, k, v and o.
  JobSpec llama = load(R"(model: {hidden_size: 896, intermediate_size: 4864,
  num_hidden_layers: 24, num_attention_heads: 14, num_key_value_heads: 2,
  vocab_size: 151936, tie_word_embeddings: true, attention_bias: true,
  torch_dtype: bfloat16, architectures: [LlamaForCausalLM]}
training: {sequence_length: 2048, global_batch_size: 4}
cluster: {gpu: h200}
)");
  EXPECT_EQ(llama.model.modelType, "llama");
  EXPECT_TRUE(llama.model.qkvBias);
  EXPECT_TRUE(llama.model.oBias);
  EXPECT_EQ(llama.model.headDim, 64);

  // Qwen2 always has q/k/v biases and never an o bias.
  JobSpec qwen = load(kBaseJob, {"model=qwen2.5-0.5b"});
  EXPECT_TRUE(qwen.model.qkvBias);
  EXPECT_FALSE(qwen.model.oBias);
  EXPECT_TRUE(load(kBaseJob, {"model=qwen3-8b"}).model.qkNorm);
}

TEST(Job, HFConfigFile) {
  std::string config = writeTemp(R"({"model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false})",
                                 ".json");
  Diagnostic diag;
  auto model = loadHFConfig(config, diag);
  ASSERT_TRUE(model) << diag.str();
  EXPECT_EQ(model->modelType, "mistral");
  EXPECT_EQ(model->numKeyValueHeads, 8);
  EXPECT_DOUBLE_EQ(model->rmsNormEps, 1e-5);
  EXPECT_FALSE(model->qkvBias);
}

TEST(Job, CustomGpuAndLink) {
  JobSpec job = load(R"(model: llama3.2-1b
training: {sequence_length: 2048, global_batch_size: 8}
cluster:
  gpu: {name: mi-x, memory_gib: 64, bf16_tflops: 400, hbm_gbps: 2000}
  interconnect: {intra_node: {bandwidth_gbps: 100, latency_us: 3}}
)");
  EXPECT_EQ(job.cluster.gpu.name, "mi-x");
  EXPECT_DOUBLE_EQ(job.cluster.gpu.hostLinkGBps, 32);
  EXPECT_DOUBLE_EQ(job.cluster.intraNode.bandwidthGBps, 100);
  EXPECT_DOUBLE_EQ(job.cluster.intraNode.latencyUs, 3);
}

TEST(Job, Fp8PeakOfPresetsAndCustomGpus) {
  // Hopper and Ada have FP8 tensor cores; Ampere has none.
  EXPECT_DOUBLE_EQ(load(kBaseJob).cluster.gpu.fp8Tflops, 1978.9);
  EXPECT_DOUBLE_EQ(load(kBaseJob, {"cluster.gpu=h200"}).cluster.gpu.fp8Tflops,
                   1978.9);
  EXPECT_DOUBLE_EQ(load(kBaseJob, {"cluster.gpu=l40s"}).cluster.gpu.fp8Tflops, 733);
  EXPECT_DOUBLE_EQ(load(kBaseJob, {"cluster.gpu=rtx4090"}).cluster.gpu.fp8Tflops,
                   330.3);
  for (const char *ampere : {"a10", "a40", "a100-40g", "a100-80g"})
    EXPECT_EQ(load(kBaseJob, {std::string("cluster.gpu=") + ampere})
                  .cluster.gpu.fp8Tflops,
              0)
        << ampere;
  // A custom GPU: none unless it says; a preset's field can be overridden.
  const std::string custom = R"(model: llama3.2-1b
training: {sequence_length: 2048, global_batch_size: 8}
cluster:
  gpu: {name: mi-x, memory_gib: 64, bf16_tflops: 400, hbm_gbps: 2000}
)";
  EXPECT_EQ(load(custom).cluster.gpu.fp8Tflops, 0);
  EXPECT_DOUBLE_EQ(
      load(custom, {"cluster.gpu.fp8_tflops=800"}).cluster.gpu.fp8Tflops, 800);
  EXPECT_DOUBLE_EQ(load(kBaseJob, {"cluster.gpu.fp8_tflops=0"}).cluster.gpu.fp8Tflops,
                   0);
  for (const char *bad : {"-1", "nan", ".inf", "1e7", "fast"}) {
    Diagnostic d = fail(custom, {std::string("cluster.gpu.fp8_tflops=") + bad});
    EXPECT_EQ(d.field, "cluster.gpu.fp8_tflops") << bad << ": " << d.str();
  }
  EXPECT_EQ(fail(custom, {"cluster.gpu.fp8_tflops=-1"}).message,
            "must be >= 0, got -1");
}

TEST(Job, Fp8PrecisionsParse) {
  JobSpec mixed = load(kBaseJob, {"training.precision=fp8-mixed"});
  EXPECT_EQ(mixed.training.precision, swift::plan::Precision::Fp8Mixed);
  EXPECT_EQ(unsupportedPrecision(mixed), "");
  JobSpec pure = load(kBaseJob, {"training.precision=fp8-bf16", "cluster.gpu=l40s"});
  EXPECT_EQ(pure.training.precision, swift::plan::Precision::Fp8Bf16);
  // A custom GPU that gives its FP8 peak.
  load(kBaseJob, {"training.precision=fp8-mixed", "cluster.gpu.preset=a100-80g",
                  "cluster.gpu.fp8_tflops=600"});
}

TEST(JobErrors, Fp8NeedsAnFp8GpuFullFineTuningAndSwiftRun) {
  // Located at training.precision, naming where the other key was set.
  Diagnostic gpu = fail(R"(model: llama3.2-1b
training: {sequence_length: 2048, global_batch_size: 8, precision: fp8-mixed}
cluster: {gpu: a100-80g}
)");
  EXPECT_EQ(gpu.field, "training.precision");
  EXPECT_EQ(gpu.line, 2);
  EXPECT_EQ(gpu.message,
            "precision fp8-mixed runs FP8 GEMMs, and cluster.gpu a100-80g has "
            "no FP8 tensor cores (FP8 needs Ada or Hopper: l40s, rtx4090, h100, "
            "h100-96g-500w, h200; a custom gpu gives fp8_tflops); use "
            "precision bf16-mixed");
  EXPECT_NE(fail(kBaseJob, {"training.precision=fp8-bf16", "cluster.gpu=a10"})
                .message.find("cluster.gpu a10 has no FP8 tensor cores"),
            std::string::npos);
  EXPECT_NE(fail(kBaseJob, {"training.precision=fp8-mixed",
                            "cluster.gpu.fp8_tflops=0"})
                .message.find("has no FP8 tensor cores"),
            std::string::npos);

  for (const char *method : {"lora", "qlora"}) {
    Diagnostic d = fail(kBaseJob, {"training.precision=fp8-bf16",
                                   std::string("training.method=") + method});
    EXPECT_EQ(d.field, "training.precision") << method;
    EXPECT_EQ(d.message, std::string("precision fp8-bf16 is for full "
                                     "fine-tuning: swift-run's ") +
                             method + " adapters run bf16 GEMMs; use precision "
                             "bf16 with method " + method +
                             "; training.method set by --set training.method=" +
                             method);
  }

  Diagnostic hf = fail(kBaseJob, {"training.precision=fp8-mixed", "backend=hf"});
  EXPECT_EQ(hf.field, "training.precision");
  EXPECT_EQ(hf.message, "precision fp8-mixed runs in swift-run only: backend hf "
                        "trains with bf16 GEMMs; use backend swift-run, or "
                        "precision bf16-mixed on hf; backend set by --set "
                        "backend=hf");
  Diagnostic ds = fail(kBaseJob, {"backend=deepspeed", "training.precision=fp8-mixed"});
  EXPECT_EQ(ds.field, "training.precision");
  EXPECT_NE(ds.message.find("backend deepspeed trains with bf16 GEMMs, and "
                            "DeepSpeed and ms-swift artifacts are not emitted "
                            "for FP8"),
            std::string::npos)
      << ds.str();
  // The storage twins run anywhere.
  for (const char *p : {"bf16-mixed", "bf16"})
    load(kBaseJob, {std::string("training.precision=") + p, "cluster.gpu=a10",
                    "training.method=lora", "backend=hf"});
}

TEST(Job, LoraSettings) {
  JobSpec job = load(std::string(kBaseJob),
                     {"training.method=qlora", "training.lora.rank=64",
                      "training.lora.targets=[q_proj, v_proj]"});
  EXPECT_EQ(job.training.method, swift::plan::Method::QLora);
  EXPECT_EQ(job.training.lora.rank, 64);
  ASSERT_EQ(job.training.lora.targets.size(), 2u);
  EXPECT_EQ(job.training.lora.targets[1], "v_proj");
  EXPECT_EQ(job.training.lora.dropout, 0);

  // dropout (peft's lora_dropout) next to the other keys; all-linear alone.
  JobSpec dropout = load(std::string(kBaseJob),
                         {"training.method=lora",
                          "training.lora={rank: 8, alpha: 16, dropout: 0.05, "
                          "targets: all-linear}"});
  EXPECT_EQ(dropout.training.lora.rank, 8);
  EXPECT_DOUBLE_EQ(dropout.training.lora.alpha, 16);
  EXPECT_DOUBLE_EQ(dropout.training.lora.dropout, 0.05);
  EXPECT_EQ(dropout.training.lora.targets, std::vector<std::string>{"all-linear"});
}

// Targets are all-linear or the decoder linears swift-run can adapt
// (plan::loraTargetNames()); dropout is a probability below 1. Both are
// located errors naming the field.
TEST(JobErrors, LoraTargetsAndDropout) {
  Diagnostic d = fail(kBaseJob, {"training.method=lora",
                                 "training.lora.targets=[q_proj, q_porj]"});
  EXPECT_EQ(d.field, "training.lora.targets");
  EXPECT_NE(d.message.find("'q_porj' is not a linear layer of the decoder"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("did you mean 'q_proj'?"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                           "down_proj"),
            std::string::npos)
      << d.message;
  // lm_head is never adapted (as peft's all-linear).
  EXPECT_EQ(fail(kBaseJob, {"training.lora.targets=lm_head"}).field,
            "training.lora.targets");
  // In the file: the position of the bad name.
  Diagnostic located = fail(R"(model: llama3.2-1b
training:
  sequence_length: 2048
  global_batch_size: 8
  method: lora
  lora: {rank: 8, targets: [q_proj, mlp]}
cluster: {gpu: h100}
)");
  EXPECT_EQ(located.field, "training.lora.targets");
  EXPECT_EQ(located.line, 6);
  EXPECT_EQ(located.column, 37);
  Diagnostic p = fail(kBaseJob, {"training.lora.dropout=1"});
  EXPECT_EQ(p.field, "training.lora.dropout");
  EXPECT_NE(p.message.find("[0, 1)"), std::string::npos) << p.message;
  EXPECT_EQ(fail(kBaseJob, {"training.lora.dropout=-0.1"}).field,
            "training.lora.dropout");
}

TEST(Job, OptimizerDefaultsAreThePlans) {
  JobSpec job = load(kBaseJob);
  const swift::plan::OptimizerConfig defaults;
  EXPECT_FALSE(job.training.optimizerSettingsGiven);
  EXPECT_EQ(job.training.optimizer, swift::plan::Optimizer::AdamW);
  EXPECT_DOUBLE_EQ(job.training.optimizerConfig.lr, defaults.lr);
  EXPECT_DOUBLE_EQ(job.training.optimizerConfig.beta2, 0.95);
  EXPECT_TRUE(job.training.lrSchedule.isDefault());
  EXPECT_FALSE(job.training.maxGradNorm.has_value());
  EXPECT_EQ(job.training.seed, 0u);
  // The shorthand stays valid and sets nothing else.
  JobSpec named = load(kBaseJob, {"training.optimizer=adamw"});
  EXPECT_FALSE(named.training.optimizerSettingsGiven);
}

TEST(Job, OptimizerMappingScheduleClippingSeed) {
  JobSpec job = load(R"(model: llama3.2-1b
training:
  sequence_length: 2048
  global_batch_size: 8
  optimizer: {name: adamw, lr: 3e-4, betas: [0.9, 0.999], eps: 1e-6, weight_decay: 0.1}
  lr_schedule: {warmup_steps: 100, decay: cosine, min_lr_ratio: 0.1}
  max_grad_norm: 1.0
  seed: 42
cluster: {gpu: h100, gpus_per_node: 8}
)");
  const TrainingSpec &t = job.training;
  EXPECT_TRUE(t.optimizerSettingsGiven);
  EXPECT_DOUBLE_EQ(t.optimizerConfig.lr, 3e-4);
  EXPECT_DOUBLE_EQ(t.optimizerConfig.beta1, 0.9);
  EXPECT_DOUBLE_EQ(t.optimizerConfig.beta2, 0.999);
  EXPECT_DOUBLE_EQ(t.optimizerConfig.eps, 1e-6);
  EXPECT_DOUBLE_EQ(t.optimizerConfig.weightDecay, 0.1);
  EXPECT_EQ(t.lrSchedule.warmupSteps, 100);
  EXPECT_EQ(t.lrSchedule.decay, swift::plan::LrDecay::Cosine);
  EXPECT_DOUBLE_EQ(t.lrSchedule.minLrRatio, 0.1);
  EXPECT_EQ(t.maxGradNorm, 1.0);
  EXPECT_EQ(t.seed, 42u);

  // --set one field over the shorthand; 0 means no clipping but is "set".
  JobSpec set = load(std::string(kBaseJob) + "", {"training.optimizer=adamw",
                                                  "training.optimizer.lr=2e-5",
                                                  "training.max_grad_norm=0"});
  EXPECT_DOUBLE_EQ(set.training.optimizerConfig.lr, 2e-5);
  EXPECT_DOUBLE_EQ(set.training.optimizerConfig.beta1, 0.9);
  EXPECT_EQ(set.training.maxGradNorm, 0.0);
  EXPECT_TRUE(set.training.optimizerSettingsGiven);
}

// One test per kind of bad input: each names the field, the place and the fix.

TEST(JobErrors, OptimizerSettings) {
  auto job = [](const std::string &training) {
    return "model: llama3.2-1b\ntraining: {sequence_length: 2048, "
           "global_batch_size: 8, " +
           training + "}\ncluster: {gpu: h100}\n";
  };
  Diagnostic d = fail(job("optimizer: {lr: 1e-4, weight_decya: 0.1}"));
  EXPECT_EQ(d.field, "training.optimizer.weight_decya");
  EXPECT_EQ(d.line, 2);
  EXPECT_NE(d.message.find("did you mean 'weight_decay'?"), std::string::npos);
  d = fail(job("optimizer: adam"));
  EXPECT_EQ(d.field, "training.optimizer");
  EXPECT_NE(d.message.find("did you mean 'adamw'?"), std::string::npos);
  d = fail(job("optimizer: {lr: 0}"));
  EXPECT_EQ(d.field, "training.optimizer.lr");
  EXPECT_NE(d.message.find("(0, 10]"), std::string::npos) << d.message;
  d = fail(job("optimizer: {betas: [0.9]}"));
  EXPECT_EQ(d.field, "training.optimizer.betas");
  d = fail(job("optimizer: {betas: [0.9, 1.0]}"));
  EXPECT_NE(d.message.find("[0, 1)"), std::string::npos) << d.message;
  d = fail(job("lr_schedule: {decay: cosin}"));
  EXPECT_EQ(d.field, "training.lr_schedule.decay");
  EXPECT_NE(d.message.find("did you mean 'cosine'?"), std::string::npos);
  d = fail(job("lr_schedule: {warmup_steps: -1}"));
  EXPECT_EQ(d.field, "training.lr_schedule.warmup_steps");
  d = fail(job("lr_schedule: {min_lr_ratio: 0.1}"));
  EXPECT_NE(d.message.find("decay: cosine or linear"), std::string::npos);
  d = fail(job("lr_schedule: {decay: linear, min_lr_ratio: 2}"));
  EXPECT_EQ(d.field, "training.lr_schedule.min_lr_ratio");
  d = fail(job("max_grad_norm: -1"));
  EXPECT_EQ(d.field, "training.max_grad_norm");
  d = fail(job("seed: x"));
  EXPECT_EQ(d.field, "training.seed");
  d = fail(kBaseJob, {"training.lr_shedule.decay=cosine"});
  EXPECT_NE(d.message.find("did you mean 'lr_schedule'?"), std::string::npos);
}

TEST(JobErrors, YamlSyntax) {
  Diagnostic d = fail("model: [llama\ntraining: {}\n");
  EXPECT_GT(d.line, 0);
  EXPECT_NE(d.message.find("YAML syntax error"), std::string::npos);
}

TEST(JobErrors, UnknownKeySuggestsClosest) {
  Diagnostic d = fail(std::string(kBaseJob) + "strategy: {zeroo: 3}\n");
  EXPECT_EQ(d.field, "strategy.zeroo");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 12);
  EXPECT_NE(d.message.find("did you mean 'zero'?"), std::string::npos);
}

TEST(JobErrors, WrongType) {
  Diagnostic d = fail(kBaseJob, {"training.sequence_length=long"});
  EXPECT_EQ(d.field, "training.sequence_length");
  EXPECT_EQ(d.file, "--set training.sequence_length=long");
  EXPECT_NE(d.message.find("expected an integer"), std::string::npos);
}

TEST(JobErrors, QuotedBooleansAreStrings) {
  // JSON's "no" is a string (Python would read it as true); YAML's plain
  // no is false, its quoted "no" a string.
  std::string config = writeTemp(R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 256, "tie_word_embeddings": "no"})",
                                 ".json");
  Diagnostic diag;
  EXPECT_FALSE(loadHFConfig(config, diag));
  EXPECT_EQ(diag.field, "tie_word_embeddings");
  EXPECT_EQ(diag.message, "expected true or false, got string \"no\"");
  EXPECT_EQ(diag.line, 3);
  EXPECT_EQ(diag.column, 47);
  const std::string model = R"(model:
  model_type: llama
  hidden_size: 64
  intermediate_size: 128
  num_hidden_layers: 2
  num_attention_heads: 4
  vocab_size: 256
)";
  const std::string rest = R"(training: {sequence_length: 64, global_batch_size: 8}
cluster: {gpu: h100}
)";
  EXPECT_FALSE(load(model + "  tie_word_embeddings: no\n" + rest)
                   .model.tieWordEmbeddings);
  Diagnostic quoted = fail(model + "  tie_word_embeddings: \"no\"\n" + rest);
  EXPECT_EQ(quoted.field, "model.tie_word_embeddings");
  EXPECT_EQ(quoted.message, "expected true or false, got the string \"no\"");
  EXPECT_EQ(quoted.line, 8);
  // A config.json is JSON (it was read as YAML, which took this file).
  std::string yaml = writeTemp("model_type: llama\nhidden_size: 64\n", ".json");
  EXPECT_FALSE(loadHFConfig(yaml, diag));
  EXPECT_EQ(diag.line, 1);
  EXPECT_EQ(diag.message.rfind("not valid JSON: syntax error", 0), 0u)
      << diag.str();
}

// Errors and warnings about a config.json point at its line and column and
// say which job key led there; those about an inline model at the job's or
// at the --set that set the field. One reader (swift/Plan/HFConfig.h)
// behind both.
TEST(JobErrors, HFConfigDiagnosticsAreLocated) {
  auto text = [](const std::string &factor) {
    return R"({
  "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256,
  "max_position_embeddings": 32,
  "rope_scaling": {"rope_type": "linear",
                   "factor": )" + factor + "}\n}";
  };
  auto jobOf = [](const std::string &model) {
    return "model: " + model +
           "\ntraining: {sequence_length: 64, global_batch_size: 8}\n"
           "cluster: {gpu: h100}\n";
  };
  std::string config = writeTemp(text("\"2\""), ".json");
  Diagnostic d = fail(jobOf(config));
  EXPECT_EQ(d.str(), config + ":6:30: error: model -> rope_scaling.factor: "
                              "expected a number, got string \"2\"");
  std::string fixed = writeTemp(text("2"), ".fixed.json");
  JobSpec ok = load(jobOf(fixed));
  EXPECT_EQ(ok.model.ropeScaling.type, swift::plan::RopeType::Linear);
  ASSERT_EQ(ok.warnings.size(), 1u);
  EXPECT_EQ(ok.warnings[0].location(), fixed + ":4:30");
  EXPECT_EQ(ok.warnings[0].field, "model -> max_position_embeddings");
  // Missing: where the object that lacks it starts.
  std::string missing = writeTemp("{\"model_type\": \"qwen3\", \"hidden_size\": 64}",
                                  ".missing.json");
  d = fail(jobOf(missing));
  EXPECT_EQ(d.str(), missing + ":1:1: error: model -> intermediate_size: "
                               "missing; an HF model config needs it");
  // The same rules inline, in the job's words and places.
  d = fail(kBaseJob, {"model.rope_scaling={rope_type: linear, factor: x}"});
  EXPECT_EQ(d.str(), "--set model.rope_scaling={rope_type: linear, factor: x}: "
                     "error: model.rope_scaling.factor: expected a number, got "
                     "'x'");
  d = fail("model: {hidden_size: 64, intermediate_size: 128,\n"
           "  num_hidden_layers: 2, num_attention_heads: 4, vocab_size: 256,\n"
           "  rope_parameters: {rope_type: yarn}}\n"
           "training: {sequence_length: 64, global_batch_size: 8}\n"
           "cluster: {gpu: h100}\n");
  EXPECT_EQ(d.field, "model.rope_parameters.rope_type");
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.column, 32);
  EXPECT_NE(d.message.find("rope type 'yarn' is not supported"),
            std::string::npos);
}

// Qwen2's and Qwen3's MLPs have no biases whatever mlp_bias says (as
// transformers builds them); the reader once kept it for them.
TEST(Job, MlpBiasIsLlamas) {
  for (const char *type : {"qwen2", "qwen3", "mistral", "llama"}) {
    JobSpec job = load(kBaseJob, {std::string("model.model_type=") + type,
                                  "model.mlp_bias=true"});
    EXPECT_EQ(job.model.mlpBias, std::string(type) == "llama") << type;
  }
}

TEST(JobErrors, UnknownPresets) {
  EXPECT_NE(fail(kBaseJob, {"model=qwen2.5-8b"}).message.find("did you mean"),
            std::string::npos);
  EXPECT_EQ(fail(kBaseJob, {"cluster.gpu=v100"}).field, "cluster.gpu");
  EXPECT_EQ(fail(kBaseJob, {"cluster.interconnect.intra_node=nvswitch"}).field,
            "cluster.interconnect.intra_node");
}

TEST(JobErrors, MissingConfigJson) {
  Diagnostic d = fail(kBaseJob, {"model=nowhere/config.json"});
  EXPECT_EQ(d.field, "model");
  EXPECT_NE(d.message.find("no such file"), std::string::npos);
}

TEST(JobErrors, ZeroAndNegativeSizes) {
  EXPECT_NE(fail(kBaseJob, {"training.global_batch_size=0"}).message.find("positive"),
            std::string::npos);
  EXPECT_NE(fail(kBaseJob, {"cluster.nodes=-1"}).message.find("positive"),
            std::string::npos);
  EXPECT_NE(fail(kBaseJob, {"training.lora.rank=0"}).message.find("positive"),
            std::string::npos);
  EXPECT_NE(fail(kBaseJob, {"cluster.host.memory_gib=0"}).message.find("positive"),
            std::string::npos);
}

// Issue 15: every number is finite and within a sane bound, checked at the
// reader with the field named.
TEST(JobErrors, NonFiniteNumbers) {
  for (const char *text : {"nan", "NaN", "inf", "-inf", "infinity", ".nan",
                           ".inf", "-.Inf"}) {
    for (const char *key :
         {"cluster.host.memory_gib", "cluster.gpu.memory_gib",
          "cluster.interconnect.inter_node.bandwidth_gbps",
          "strategy.bucket_mib", "cluster.gpu.bf16_tflops",
          "training.optimizer.lr", "model.rope_theta"}) {
      std::string set = std::string(key) + "=" + text;
      Diagnostic d = fail(kBaseJob, {set});
      EXPECT_EQ(d.field, key) << set;
      EXPECT_EQ(d.message, std::string("expected a finite number, got '") +
                               text + "'")
          << set << ": " << d.str();
    }
  }
  Diagnostic d = fail("model: llama3.2-1b\n"
                      "training: {sequence_length: 2048, global_batch_size: 8}\n"
                      "cluster:\n"
                      "  gpu: h100\n"
                      "  host: {memory_gib: nan}\n");
  EXPECT_EQ(d.field, "cluster.host.memory_gib");
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(d.message, "expected a finite number, got 'nan'");
  d = fail(kBaseJob, {"cluster.host.memory_gib=1e400"});
  EXPECT_EQ(d.message, "out of range: 1e400");
}

TEST(JobErrors, NumbersOutOfRange) {
  auto message = [](const std::string &set) {
    Diagnostic d = fail(kBaseJob, {set});
    EXPECT_EQ(d.field, set.substr(0, set.find('='))) << d.str();
    return d.message;
  };
  EXPECT_EQ(message("training.sequence_length=99999999999999999999"),
            "out of range: 99999999999999999999 (at most 4194304)");
  EXPECT_EQ(message("training.sequence_length=9223372036854775807"),
            "out of range: 9223372036854775807 (at most 4194304)");
  EXPECT_EQ(message("cluster.nodes=-99999999999999999999"),
            "out of range: -99999999999999999999 (at least 1)");
  EXPECT_EQ(message("training.global_batch_size=16777217"),
            "out of range: 16777217 (at most 16777216)");
  EXPECT_EQ(message("training.micro_batch_size=99999999999999999999"),
            "out of range: 99999999999999999999 (at most 16777216)");
  EXPECT_EQ(message("model.num_hidden_layers=100000"),
            "out of range: 100000 (at most 4096)");
  EXPECT_EQ(message("model.vocab_size=1099511627776"),
            "out of range: 1099511627776 (at most 16777216)");
  EXPECT_EQ(message("model.hidden_size=2097152"),
            "out of range: 2097152 (at most 1048576)");
  EXPECT_EQ(message("cluster.gpus_per_node=4611686018427387904"),
            "out of range: 4611686018427387904 (at most 1024)");
  EXPECT_EQ(message("cluster.nodes=4611686018427387904"),
            "out of range: 4611686018427387904 (at most 65536)");
  EXPECT_EQ(message("cluster.gpu.memory_gib=1e308"),
            "out of range: 1e308 (at most 1000000)");
  EXPECT_EQ(message("cluster.host.memory_gib=2e6"),
            "out of range: 2e6 (at most 1000000)");
  EXPECT_EQ(message("cluster.interconnect.inter_node.bandwidth_gbps=1e7"),
            "out of range: 1e7 (at most 1000000)");
  EXPECT_EQ(message("strategy.bucket_mib=1e300"),
            "out of range: 1e300 (at most 1048576)");
  EXPECT_EQ(message("strategy.bucket_mib=1e-9"),
            "must be at least one byte (2^-20 MiB), got 1e-9");
  // nodes x gpus_per_node stays within a plan's world size.
  Diagnostic d = fail(kBaseJob, {"cluster.nodes=65536", "cluster.gpus_per_node=1024"});
  EXPECT_EQ(d.field, "cluster.nodes");
  EXPECT_NE(d.message.find("67108864 GPUs, more than 1048576"),
            std::string::npos)
      << d.message;
  // The bounds themselves are accepted.
  JobSpec job = load(kBaseJob, {"training.global_batch_size=16777216",
                                "cluster.nodes=1024",
                                "cluster.gpus_per_node=1024",
                                "strategy.bucket_mib=1048576"});
  EXPECT_EQ(job.cluster.numGpus(), 1 << 20);
  EXPECT_EQ(job.strategy.bucketBytes, int64_t(1) << 40);
}

TEST(JobErrors, InconsistentModel) {
  EXPECT_EQ(fail(kBaseJob, {"model.num_key_value_heads=5"}).field,
            "model.num_key_value_heads");
  // head_dim given explicitly is allowed not to divide hidden_size, but it
  // must be even for RoPE.
  EXPECT_EQ(fail(kBaseJob, {"model.head_dim=63"}).field, "model.head_dim");
}

TEST(JobErrors, MissingFile) {
  Diagnostic d;
  EXPECT_FALSE(loadJob("/nonexistent/job.yaml", {}, d));
  EXPECT_EQ(d.str(), "/nonexistent/job.yaml: error: no such file");
}

// strategy's layout over the GPUs (tp, pp, cp, dp_shard, pp_schedule,
// virtual_stages): auto unless given in the file or by --set.
TEST(Job, LayoutKeysAreReadAndAuto) {
  auto expectOpen = [](const StrategySpec &s) {
    EXPECT_FALSE(s.tp);
    EXPECT_FALSE(s.pp);
    EXPECT_FALSE(s.cp);
    EXPECT_FALSE(s.dpShard);
    EXPECT_FALSE(s.ppSchedule);
    EXPECT_FALSE(s.virtualStages);
  };
  expectOpen(load(kBaseJob).strategy);
  expectOpen(load(std::string(kBaseJob) +
                  "strategy: {tp: auto, pp: auto, cp: auto, dp_shard: auto, "
                  "pp_schedule: auto, virtual_stages: auto}\n")
                 .strategy);
  // 8 GPUs = tp 2 x pp 2 x cp 2, one data-parallel rank.
  StrategySpec file =
      load(std::string(kBaseJob) +
           "strategy: {tp: 2, pp: 2, cp: 2, dp_shard: 1, pp_schedule: "
           "interleaved, virtual_stages: 2}\n")
          .strategy;
  EXPECT_EQ(file.tp, 2);
  EXPECT_EQ(file.pp, 2);
  EXPECT_EQ(file.cp, 2);
  EXPECT_EQ(file.dpShard, 1);
  EXPECT_EQ(file.ppSchedule, swift::plan::PipelineSchedule::Interleaved);
  EXPECT_EQ(file.virtualStages, 2);
  // 32 GPUs = tp 8 x pp 2 x 2 data-parallel ranks, in one group of 2.
  StrategySpec set = load(kBaseJob, {"cluster.nodes=4", "strategy.tp=8",
                                     "strategy.pp=2", "strategy.dp_shard=2",
                                     "strategy.pp_schedule=1f1b"})
                         .strategy;
  EXPECT_EQ(set.tp, 8);
  EXPECT_EQ(set.pp, 2);
  EXPECT_FALSE(set.cp);
  EXPECT_EQ(set.dpShard, 2);
  EXPECT_EQ(set.ppSchedule, swift::plan::PipelineSchedule::OneFOneB);
  // More tensor-parallel ranks than the 8 key/value heads replicate them.
  EXPECT_EQ(load(kBaseJob, {"cluster.nodes=2", "strategy.tp=16"}).strategy.tp, 16);
  // Chunks per rank with the schedule left open: interleaved is implied.
  EXPECT_EQ(load(kBaseJob, {"strategy.virtual_stages=2"}).strategy.virtualStages, 2);
}

TEST(JobErrors, LayoutDividesTheGpus) {
  Diagnostic d = fail(std::string(kBaseJob) + "strategy: {tp: 3}\n");
  EXPECT_EQ(d.field, "strategy.tp");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 16);
  EXPECT_EQ(d.message, "tp 3 does not divide the cluster's 8 GPUs "
                       "(cluster.nodes x cluster.gpus_per_node)");
  d = fail(kBaseJob, {"strategy.tp=4", "strategy.pp=4"});
  EXPECT_EQ(d.field, "strategy.pp");
  EXPECT_EQ(d.file, "--set strategy.pp=4");
  EXPECT_EQ(d.message, "tp 4 x pp 4 = 16 does not divide the cluster's 8 "
                       "GPUs (cluster.nodes x cluster.gpus_per_node)");
  d = fail(kBaseJob, {"strategy.tp=2", "strategy.dp_shard=3"});
  EXPECT_EQ(d.field, "strategy.dp_shard");
  EXPECT_EQ(d.message,
            "3 does not divide the 4 data-parallel ranks (8 GPUs / tp 2) "
            "into equal groups, each sharing one copy of the model states");
  d = fail(kBaseJob, {"strategy.dp_shard=16"});
  EXPECT_EQ(d.message,
            "16 does not divide the 8 data-parallel ranks (the cluster's 8 "
            "GPUs) into equal groups, each sharing one copy of the model "
            "states");
  auto message = [](const std::string &set) {
    Diagnostic e = fail(kBaseJob, {set});
    EXPECT_EQ(e.field, set.substr(0, set.find('='))) << e.str();
    return e.message;
  };
  EXPECT_EQ(message("strategy.tp=2048"), "out of range: 2048 (at most 1024)");
  EXPECT_EQ(message("strategy.cp=0"), "must be positive, got 0");
  EXPECT_EQ(message("strategy.dp_shard=-1"), "must be positive, got -1");
  EXPECT_EQ(message("strategy.pp=two"), "expected an integer, got 'two'");
}

TEST(JobErrors, LayoutFitsTheModelAndSequence) {
  Diagnostic d = fail(kBaseJob, {"cluster.nodes=8", "strategy.tp=64"});
  EXPECT_EQ(d.field, "strategy.tp");
  EXPECT_EQ(d.message, "64 does not divide the model's 32 attention heads "
                       "(each tensor-parallel rank computes whole heads)");
  // 24 heads and 6 key/value heads over 4 ranks: 6 K/V heads neither split
  // evenly nor replicate evenly.
  d = fail(kBaseJob, {"model.num_attention_heads=24", "model.head_dim=64",
                      "model.num_key_value_heads=6", "strategy.tp=4"});
  EXPECT_EQ(d.message,
            "4 and the model's 6 key/value heads: neither divides the other "
            "(tensor-parallel ranks split whole key/value heads, or "
            "replicate them)");
  d = fail(kBaseJob, {"model.intermediate_size=8196", "strategy.tp=8"});
  EXPECT_EQ(d.message, "8 does not divide the model's intermediate_size 8196 "
                       "(the MLP's columns are split over tensor-parallel "
                       "ranks)");
  d = fail(kBaseJob, {"cluster.nodes=4", "strategy.pp=32"});
  EXPECT_EQ(d.field, "strategy.pp");
  EXPECT_EQ(d.message, "32 pipeline stages exceed the model's 16 decoder layers");
  d = fail(kBaseJob, {"training.sequence_length=2052", "strategy.cp=4"});
  EXPECT_EQ(d.field, "strategy.cp");
  EXPECT_EQ(d.message,
            "4 needs training.sequence_length to be a multiple of 2 x cp = 8 "
            "(each rank takes a chunk from each end of the sequence, "
            "balancing causal attention), got 2052");
}

TEST(JobErrors, InterleavedNeedsPipeline) {
  auto error = [](std::vector<std::string> sets) {
    Diagnostic d = fail(kBaseJob, sets);
    return d.field + ": " + d.message;
  };
  EXPECT_EQ(error({"strategy.pp=1", "strategy.pp_schedule=interleaved"}),
            "strategy.pp_schedule: interleaved schedules a pipeline, but "
            "strategy.pp is 1; set pp > 1 or leave pp_schedule auto");
  EXPECT_EQ(error({"strategy.pp_schedule=interleaved", "strategy.virtual_stages=1"}),
            "strategy.virtual_stages: pp_schedule interleaved needs at least 2 "
            "model chunks per pipeline rank, got 1");
  EXPECT_EQ(error({"strategy.pp=1", "strategy.virtual_stages=2"}),
            "strategy.virtual_stages: 2 model chunks per pipeline rank need a "
            "pipeline, but strategy.pp is 1");
  EXPECT_EQ(error({"strategy.pp_schedule=1f1b", "strategy.virtual_stages=2"}),
            "strategy.virtual_stages: 2 model chunks per pipeline rank need "
            "pp_schedule interleaved, not 1f1b");
  EXPECT_EQ(error({"strategy.pp=8", "strategy.virtual_stages=3"}),
            "strategy.virtual_stages: pp 8 x virtual_stages 3 = 24 model "
            "chunks exceed the model's 16 decoder layers");
  EXPECT_EQ(error({"strategy.virtual_stages=17"}),
            "strategy.virtual_stages: 17 model chunks per pipeline rank "
            "exceed the model's 16 decoder layers");
  EXPECT_EQ(error({"strategy.pp_schedule=1F1B"}),
            "strategy.pp_schedule: '1F1B' is not one of 1f1b, interleaved; "
            "did you mean '1f1b'?");
}

// The mesh engines are backends of their own: `backend:` takes their
// spellings, and a wrong value lists them with the others.
TEST(Job, BackendNamesTheMeshEngines) {
  EXPECT_EQ(load(kBaseJob, {"backend=torchtitan"}).backend,
            swift::plan::Backend::Torchtitan);
  EXPECT_EQ(load(kBaseJob, {"backend=megatron"}).backend,
            swift::plan::Backend::Megatron);
  Diagnostic d = fail(kBaseJob, {"backend=megatron-lm"});
  EXPECT_EQ(d.field, "backend");
  EXPECT_NE(d.message.find("is not one of swift-run, hf, deepspeed, "
                           "torchtitan, megatron"),
            std::string::npos)
      << d.str();
}

TEST(Presets, TablesAreConsistent) {
  for (const GpuPreset &g : gpuPresets()) {
    EXPECT_GT(g.memoryGiB, 0) << g.name;
    EXPECT_GT(g.bf16Tflops, 0) << g.name;
    // FP8 (where there is any) doubles the bf16 rate, dense, fp32 accumulate.
    EXPECT_TRUE(g.fp8Tflops == 0 || g.fp8Tflops >= 2 * g.bf16Tflops - 1)
        << g.name;
    EXPECT_NE(findLinkPreset(g.intraNode), nullptr) << g.name;
    EXPECT_NE(findLinkPreset(g.interNode), nullptr) << g.name;
    EXPECT_GT(std::string(g.source).size(), 10u) << g.name;
  }
  for (const ModelPreset &m : modelPresets()) {
    EXPECT_EQ(m.numAttentionHeads % m.numKeyValueHeads, 0) << m.name;
    EXPECT_TRUE(m.headDim || m.hiddenSize % m.numAttentionHeads == 0) << m.name;
  }
}

TEST(ClosestMatch, OnlyNearWords) {
  EXPECT_EQ(closestMatch("sequence_lenght", {"sequence_length", "seed"}),
            std::optional<std::string>("sequence_length"));
  EXPECT_FALSE(closestMatch("banana", {"zero", "offload"}));
}

} // namespace
