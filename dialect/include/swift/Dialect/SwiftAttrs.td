//===- SwiftAttrs.td - hardware, LoRA and strategy attributes -*- tablegen -*-===//

#ifndef SWIFT_DIALECT_SWIFTATTRS_TD
#define SWIFT_DIALECT_SWIFTATTRS_TD

include "swift/Dialect/SwiftDialect.td"
include "swift/Dialect/SwiftEnums.td"
include "mlir/IR/AttrTypeBase.td"

class Swift_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Swift_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A real number, printed in its shortest round-trip form (989.4, not
// 9.894000e+02). Stored as an APFloat for hashing; read with
// convertToDouble().
def Swift_DoubleParameter : AttrParameter<"::llvm::APFloat", "a real number"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer << ::mlir::swift::formatReal($_self) }];
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
}

// A real number that may be absent (left out of the printed struct).
def Swift_OptionalDoubleParameter
    : OptionalParameter<"std::optional<::llvm::APFloat>", "a real number"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<std::optional<::llvm::APFloat>> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return std::optional<::llvm::APFloat>(::llvm::APFloat(value));
  }() }];
  let printer = [{ $_printer << ::mlir::swift::formatReal(*$_self) }];
  let comparator = [{ $_lhs.has_value() == $_rhs.has_value() &&
                      (!$_lhs || $_lhs->bitwiseIsEqual(*$_rhs)) }];
}

// A real number that is 0 unless given (left out of the printed struct when
// 0).
def Swift_ZeroDefaultDoubleParameter
    : DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(0.0)",
                             "a real number, 0 when absent"> {
  let parser = Swift_DoubleParameter.parser;
  let printer = Swift_DoubleParameter.printer;
  let comparator = Swift_DoubleParameter.comparator;
}

// A yes/no answer, printed `true` / `false`.
def Swift_BoolParameter : AttrParameter<"bool", "true or false"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<bool> {
    if (::mlir::succeeded($_parser.parseOptionalKeyword("true")))
      return true;
    if (::mlir::succeeded($_parser.parseOptionalKeyword("false")))
      return false;
    return $_parser.emitError($_parser.getCurrentLocation(),
                              "expected true or false");
  }() }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}

// A yes/no answer that is false unless given (left out of the printed
// struct when false).
def Swift_FalseDefaultBoolParameter
    : DefaultValuedParameter<"bool", "false", "true or false, false when absent"> {
  let parser = Swift_BoolParameter.parser;
  let printer = Swift_BoolParameter.printer;
}

// An enum that may be left open (absent): `auto` in a job file.
class Swift_OptionalEnumParameter<string cppType>
    : OptionalParameter<"std::optional<" # cppType # ">"> {
  let printer = "$_printer << *$_self";
}

def Swift_GpuAttr : Swift_Attr<"Gpu", "gpu"> {
  let summary = "one accelerator's capacity and speed";
  let description = [{
    Datasheet (or measured) numbers of one GPU. Bandwidths are GB/s (1e9
    bytes/s) in one direction. `fp8_tflops` is the dense FP8 tensor-core
    peak (fp32 accumulation, no sparsity); absent or 0: the GPU has no FP8
    (Ampere and older), and a job cannot train in fp8-mixed or fp8-bf16 on
    it.

    ```mlir
    #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4,
               fp8_tflops = 1978.9, hbm_gbps = 3350.0, host_link_gbps = 64.0,
               nvlink_gbps = 450.0>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"preset or user name">:$name,
    "int64_t":$memory_bytes,
    Swift_DoubleParameter:$bf16_tflops,
    Swift_ZeroDefaultDoubleParameter:$fp8_tflops,
    Swift_DoubleParameter:$hbm_gbps,
    Swift_DoubleParameter:$host_link_gbps,
    Swift_DoubleParameter:$nvlink_gbps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_LinkAttr : Swift_Attr<"Link", "link"> {
  let summary = "an interconnect between GPUs";
  let description = [{
    Bandwidth per GPU in one direction (GB/s) and the latency of one
    collective step (microseconds).

    ```mlir
    #swift.link<name = "nvlink4", bandwidth_gbps = 450.0, latency_us = 5.0>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"preset or user name">:$name,
    Swift_DoubleParameter:$bandwidth_gbps,
    Swift_DoubleParameter:$latency_us);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_MeasuredRatesAttr : Swift_Attr<"MeasuredRates", "measured"> {
  let summary = "rates measured on the real machine (a hardware profile)";
  let description = [{
    A `swift.cluster`'s `cluster.profile` (`swift::job::MeasuredRates`,
    `swift/Job/MeasuredRates.h`): each rate replaces the datasheet number
    times a typical efficiency in the cost model; 0 (left out of the
    printed struct) means not measured. TFLOP/s, GB/s, microseconds per
    collective step, nanoseconds per parameter of the host AdamW.

    ```mlir
    #swift.measured<matmul_tflops = 650.0, attention_tflops = 400.0,
      elementwise_gbps = 3000.0, cpu_adam_ns_per_param = 1.5>
    ```
  }];
  let parameters = (ins
    Swift_ZeroDefaultDoubleParameter:$matmul_tflops,
    Swift_ZeroDefaultDoubleParameter:$attention_tflops,
    Swift_ZeroDefaultDoubleParameter:$elementwise_gbps,
    Swift_ZeroDefaultDoubleParameter:$host_link_gbps,
    Swift_ZeroDefaultDoubleParameter:$intra_node_bus_gbps,
    Swift_ZeroDefaultDoubleParameter:$inter_node_bus_gbps,
    Swift_ZeroDefaultDoubleParameter:$collective_latency_us,
    Swift_ZeroDefaultDoubleParameter:$cpu_adam_ns_per_param);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The attribute of `rates`, null when none was measured.
    static MeasuredRatesAttr get(::mlir::MLIRContext *context,
                                 const ::swift::job::MeasuredRates &rates);
    /// The rates, 0 where not measured.
    ::swift::job::MeasuredRates getRates() const;
  }];
}

def Swift_CountsAttr : Swift_Attr<"Counts", "counts"> {
  let summary = "the model's parameters and the job's tokens per step";
  let description = [{
    What swift-annotate-model counts on a job: the model's parameters
    (each repeated layer once per repeat, a tied embedding once), those
    that receive gradients under the job's method (the adapters' for
    LoRA/QLoRA), and the tokens of one optimizer step (sequence length x
    global batch).

    ```mlir
    #swift.counts<parameters = 1235814400, trainable_parameters = 1235814400,
      tokens_per_step = 16384>
    ```
  }];
  let parameters = (ins
    "int64_t":$parameters,
    "int64_t":$trainable_parameters,
    "int64_t":$tokens_per_step);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_OpCostAttr : Swift_Attr<"OpCost", "op_cost"> {
  let summary = "one op's work and saved memory for one micro-batch";
  let description = [{
    What swift-estimate-cost records on each op with `CostOpInterface`, as
    the discardable attribute `swift.cost` (getOpCost()): FLOPs of the
    forward, of the backward (with weight gradients where the weights
    train), of the recompute under checkpointing (0 when none), and the
    bytes the op saves for its backward, all for one micro-batch of the
    job's strategy.

    ```mlir
    {swift.cost = #swift.op_cost<forward_flops = 1024, backward_flops = 2048,
      recompute_flops = 0, saved_bytes = 256>}
    ```
  }];
  let parameters = (ins
    "int64_t":$forward_flops,
    "int64_t":$backward_flops,
    "int64_t":$recompute_flops,
    "int64_t":$saved_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_RopeScalingAttr : Swift_Attr<"RopeScaling", "rope_scaling"> {
  let summary = "how rotary frequencies are rescaled (HF rope_scaling)";
  let description = [{
    HF config.json's `rope_scaling` of a `swift.rope` whose type is not
    `default`; plan.json carries it as `model.rope_scaling` and swift-run's
    makeRope() computes the frequencies from it as transformers does.
    `low_freq_factor`, `high_freq_factor` and
    `original_max_position_embeddings` matter to `llama3` only.

    ```mlir
    #swift.rope_scaling<rope_type = llama3, factor = 8.0,
      low_freq_factor = 1.0, high_freq_factor = 4.0,
      original_max_position_embeddings = 8192>
    ```
  }];
  let parameters = (ins
    AttrParameter<"::swift::plan::RopeType", "rope type">:$rope_type,
    Swift_DoubleParameter:$factor,
    Swift_DoubleParameter:$low_freq_factor,
    Swift_DoubleParameter:$high_freq_factor,
    "int64_t":$original_max_position_embeddings);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_LoraAttr : Swift_Attr<"Lora", "lora"> {
  let summary = "low-rank adapter settings";
  let description = [{
    The job's `training.lora`: adapters `(alpha / rank) B A x` of rank
    `rank` on the target linears, `dropout` the probability of zeroing the
    adapters' input (peft's `lora_dropout`, in [0, 1)). `targets` names the
    linear layers that get adapters by the last part of their parameter name
    (one of `swift::plan::loraTargetNames()`: `q_proj`, `k_proj`, `v_proj`,
    `o_proj`, `gate_proj`, `up_proj`, `down_proj`); `all-linear` means every
    linear layer inside the decoder layers (as peft does, the lm_head
    excluded).

    ```mlir
    #swift.lora<rank = 16, alpha = 32.0, dropout = 0.05, targets = ["all-linear"]>
    ```
  }];
  let parameters = (ins
    "int64_t":$rank,
    Swift_DoubleParameter:$alpha,
    Swift_DoubleParameter:$dropout,
    AttrParameter<"::mlir::ArrayAttr", "target layer names">:$targets);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether a linear layer with this parameter name gets an adapter.
    bool targets(::llvm::StringRef weightName) const;
  }];
}

def Swift_OptimizerSettingsAttr : Swift_Attr<"OptimizerSettings", "adamw"> {
  let summary = "AdamW hyper-parameters, learning-rate schedule, clipping, seed";
  let description = [{
    The job's `training.optimizer`, `training.lr_schedule`,
    `training.max_grad_norm` and `training.seed`, as plan.json carries them
    (`swift::plan::lrAt()` gives the lr of each step). `max_grad_norm`
    absent: the job did not set it (no clipping in swift-run; DeepSpeed keeps
    its 1.0); 0: no clipping.

    ```mlir
    #swift.adamw<lr = 3.0e-04, beta1 = 0.9, beta2 = 0.95, eps = 1.0e-08,
      weight_decay = 0.1, warmup_steps = 100, decay = cosine,
      min_lr_ratio = 0.1, max_grad_norm = 1.0, seed = 0>
    ```
  }];
  let parameters = (ins
    Swift_DoubleParameter:$lr,
    Swift_DoubleParameter:$beta1,
    Swift_DoubleParameter:$beta2,
    Swift_DoubleParameter:$eps,
    Swift_DoubleParameter:$weight_decay,
    "int64_t":$warmup_steps,
    AttrParameter<"::swift::plan::LrDecay", "decay after warmup">:$decay,
    Swift_DoubleParameter:$min_lr_ratio,
    "int64_t":$seed,
    Swift_OptionalDoubleParameter:$max_grad_norm);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_StrategyAttr : Swift_Attr<"Strategy", "strategy"> {
  let summary = "a training strategy, some decisions possibly still open";
  let description = [{
    An absent field is still to be decided by the planner (`auto` in the job
    file). `checkpoint_layers` restricts checkpointing to the first k decoder
    layers; `bucket_bytes` is the gradient bucket size and `prefetch_depth`
    how many units ZeRO-3 gathers ahead. `offload_activations` keeps the
    checkpointed inputs of the first k fully checkpointed layers in pinned
    host memory (-1: all of them, 0: none); `mlp_tile_tokens` runs each
    layer's MLP over tiles of that many tokens (0: untiled).

    The layout over the GPUs (#swift.mesh): `tp`, `pp`, `cp` (tensor,
    pipeline and context parallel degrees), `dp_shard` (the ranks model
    states are sharded over: HSDP's group; the data-parallel ranks
    `W / (tp x pp x cp)` replicate across groups), `pp_schedule`
    (`one_f_one_b`, the job's 1f1b, or `interleaved`) and `virtual_stages`
    (model chunks per pipeline rank). An absent layout key is open like
    the others, but the search resolves it to the trivial layout (tp, pp,
    cp and virtual_stages 1, dp_shard all data-parallel ranks, no
    pipeline) until the cost model prices others: so absent means trivial
    in a strategy whose other decisions are made (JobOp::fixedStrategy()),
    and swift-choose-strategy writes only non-trivial values.

    ```mlir
    #swift.strategy<zero = zero3, checkpointing = full>
    #swift.strategy<zero = zero3, tp = 8, pp = 16, pp_schedule = interleaved,
      virtual_stages = 2>
    ```
  }];
  let parameters = (ins
    Swift_OptionalEnumParameter<"::mlir::swift::ZeroStage">:$zero,
    Swift_OptionalEnumParameter<"::swift::plan::Offload">:$offload,
    Swift_OptionalEnumParameter<"::swift::plan::Checkpointing">:$checkpointing,
    OptionalParameter<"std::optional<int64_t>">:$checkpoint_layers,
    OptionalParameter<"std::optional<int64_t>">:$bucket_bytes,
    OptionalParameter<"std::optional<int64_t>">:$prefetch_depth,
    OptionalParameter<"std::optional<int64_t>">:$offload_activations,
    OptionalParameter<"std::optional<int64_t>">:$mlp_tile_tokens,
    OptionalParameter<"std::optional<int64_t>">:$tp,
    OptionalParameter<"std::optional<int64_t>">:$pp,
    OptionalParameter<"std::optional<int64_t>">:$cp,
    OptionalParameter<"std::optional<int64_t>">:$dp_shard,
    Swift_OptionalEnumParameter<"::swift::plan::PipelineSchedule">:$pp_schedule,
    OptionalParameter<"std::optional<int64_t>">:$virtual_stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// tp x pp x cp of the keys that are set (absent: 1): the GPUs one
    /// data-parallel rank spans, or a factor of them while some are open.
    int64_t getModelParallelRanks() const;
  }];
}

def Swift_MeshAttr : Swift_Attr<"Mesh", "mesh"> {
  let summary = "a complete layout of the job's GPUs";
  let description = [{
    The device mesh `dp_replicate x dp_shard x cp x pp x tp`, whose product
    is the cluster's GPU count (swift.job's verifier checks it). Ranks are
    numbered inner to outer `tp < cp < dp_shard < dp_replicate < pp`, the
    order torchtitan and Megatron-LM share. `dp_shard` ranks share one copy
    of the model states (HSDP's group; ZeRO's when `dp_replicate` is 1),
    `dp_replicate` groups hold replicas. With `pp > 1`, `pp_schedule`
    (default `one_f_one_b`) and `virtual_stages` (default 1; more needs
    `interleaved`, which needs at least 2) say how the stages run, and
    `stage_layers` how many decoder layers each of the `pp x
    virtual_stages` chunks holds (chunk `c` of rank `r` at index `c x pp +
    r`). `sequence_parallel` (needs `tp > 1`) splits the norms' and
    residual adds' tokens over the tensor-parallel ranks; `cp_kind`
    (default `ring`; set only with `cp > 1`) is how context-parallel ranks
    exchange keys and values.

    ```mlir
    #swift.mesh<dp_replicate = 1, dp_shard = 8, cp = 1, pp = 16, tp = 8,
      pp_schedule = interleaved, virtual_stages = 2, sequence_parallel = true>
    ```
  }];
  let parameters = (ins
    "int64_t":$dp_replicate,
    "int64_t":$dp_shard,
    "int64_t":$cp,
    "int64_t":$pp,
    "int64_t":$tp,
    DefaultValuedParameter<"::swift::plan::PipelineSchedule",
                           "::swift::plan::PipelineSchedule::OneFOneB">:$pp_schedule,
    DefaultValuedParameter<"int64_t", "1">:$virtual_stages,
    Swift_FalseDefaultBoolParameter:$sequence_parallel,
    DefaultValuedParameter<"::swift::plan::ContextParallel",
                           "::swift::plan::ContextParallel::Ring">:$cp_kind,
    OptionalParameter<"::mlir::DenseI64ArrayAttr",
                      "decoder layers per chunk">:$stage_layers);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The GPUs the mesh spans: the product of its degrees.
    int64_t getSize() const;
  }];
}

//===----------------------------------------------------------------------===//
// What the cost passes decided and estimated. swift-choose-strategy records
// #swift.decision on the job and swift-estimate-cost #swift.estimate; the
// report and the emitters read these, nothing else.
//===----------------------------------------------------------------------===//

def Swift_CandidateAttr : Swift_Attr<"Candidate", "candidate"> {
  let summary = "one complete strategy and what it costs";
  let description = [{
    Every decision of a strategy (`checkpoint_layers` -1: all layers) with
    the micro-batch and the gradient accumulation it implies, its peak
    memory per GPU, step time and throughput, whether it fits, the
    search's verdict (`chosen`, or why it lost) and the parts alive at its
    peak (`breakdown`, name -> bytes, summing to the peak: what
    swift-plan --html draws for every strategy it priced).
    `offload_activations` and `mlp_tile_tokens` (absent: 0) are the
    activation decisions of #swift.strategy; `mesh` (#swift.mesh) its layout
    over the GPUs (absent: one data-parallel group of every GPU, tp, pp and
    cp 1).

    ```mlir
    #swift.candidate<zero = 3, offload = none, checkpointing = full,
      checkpoint_layers = -1, micro_batch_size = 2, gradient_accumulation = 8,
      fits = true, peak_bytes = 20401094656, step_seconds = 9.81,
      tokens_per_second = 53444.3, verdict = "chosen",
      breakdown = {activations = 6578896896 : i64, ...}>
    ```
  }];
  let parameters = (ins
    "int64_t":$zero,
    AttrParameter<"::swift::plan::Offload", "offload">:$offload,
    AttrParameter<"::swift::plan::Checkpointing", "checkpointing">:$checkpointing,
    "int64_t":$checkpoint_layers,
    "int64_t":$micro_batch_size,
    "int64_t":$gradient_accumulation,
    Swift_BoolParameter:$fits,
    "int64_t":$peak_bytes,
    Swift_DoubleParameter:$step_seconds,
    Swift_DoubleParameter:$tokens_per_second,
    StringRefParameter<"why it lost, or chosen">:$verdict,
    OptionalParameter<"::mlir::DictionaryAttr", "name -> bytes at its peak">:$breakdown,
    DefaultValuedParameter<"int64_t", "0">:$offload_activations,
    DefaultValuedParameter<"int64_t", "0">:$mlp_tile_tokens,
    OptionalParameter<"MeshAttr">:$mesh);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_DecisionAttr : Swift_Attr<"Decision", "decision"> {
  let summary = "what swift-choose-strategy searched and chose";
  let description = [{
    `fits`: a strategy fits in `usable_bytes` (capacity less the
    `memory_margin` fraction) and `chosen` holds it; otherwise `closest`
    holds the strategy with the smallest peak and `shortfall_bytes` how much
    it misses by. `alternatives` (#swift.candidate, best first) are the
    runners-up the report lists. `evaluated` strategies were priced of
    `considered` enumerated.

    ```mlir
    #swift.decision<fits = true, usable_bytes = 21474836480,
      memory_margin = 0.1, evaluated = 96, considered = 1152,
      chosen = #swift.candidate<...>, alternatives = [#swift.candidate<...>]>
    ```
  }];
  let parameters = (ins
    Swift_BoolParameter:$fits,
    "int64_t":$usable_bytes,
    Swift_DoubleParameter:$memory_margin,
    "int64_t":$evaluated,
    "int64_t":$considered,
    OptionalParameter<"CandidateAttr">:$chosen,
    OptionalParameter<"CandidateAttr">:$closest,
    OptionalParameter<"std::optional<int64_t>">:$shortfall_bytes,
    AttrParameter<"::mlir::ArrayAttr", "#swift.candidate list">:$alternatives);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The strategy the job now holds: the chosen one, or the closest when
    /// nothing fits (null when the search found none at all).
    CandidateAttr getPicked() const { return getFits() ? getChosen() : getClosest(); }
    /// `alternatives` as candidates (the verifier checks their type).
    ::llvm::SmallVector<CandidateAttr> getAlternativeCandidates() const;
  }];
}

def Swift_MemoryPointAttr : Swift_Attr<"MemoryPoint", "memory_point"> {
  let summary = "the allocated bytes per GPU at one point of a step";
  let description = [{
    A point of #swift.estimate's `timeline`: the phase (forward, backward
    or optimizer), the decoder layer (-1 outside the layers), the op, and
    the bytes the cost model has allocated there.

    ```mlir
    #swift.memory_point<phase = "backward", layer = 31, op = "decoder layer",
      bytes = 20924729344>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"forward, backward or optimizer">:$phase,
    "int64_t":$layer,
    StringRefParameter<"the op">:$op,
    "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Swift_EstimateAttr : Swift_Attr<"Estimate", "estimate"> {
  let summary = "memory and time of the job's strategy, per GPU";
  let description = [{
    What swift-estimate-cost priced: the peak allocated bytes per GPU, where
    it happens (`peak_phase`, `peak_layer` -1 outside the decoder layers,
    `peak_op`), the parts alive then (`breakdown`, name -> bytes, summing to
    the peak), each phase's peak, activation bytes per layer, the host
    memory per node; the step time and its parts (seconds), throughput over
    all GPUs and MFU against the datasheet bf16 peak; and the `timeline` of
    the step (#swift.memory_point, in step order: each decoder layer's
    forward, the loss, each layer's backward, the optimizer), whose largest
    point is the peak (the verifier checks it). With activation offload
    (absent: 0): the pinned host bytes per GPU holding layer inputs
    (`offloaded_activation_bytes`, part of `host_bytes`), the copies' time
    per step (`activation_copy_seconds`) and the part of it no layer's
    compute hides (`activation_offload_seconds`, part of `offload_seconds`).
  }];
  let parameters = (ins
    "int64_t":$peak_bytes,
    "int64_t":$capacity_bytes,
    StringRefParameter<"forward, backward or optimizer">:$peak_phase,
    "int64_t":$peak_layer,
    StringRefParameter<"the op at the peak">:$peak_op,
    AttrParameter<"::mlir::DictionaryAttr", "name -> bytes at the peak">:$breakdown,
    "int64_t":$forward_peak_bytes,
    "int64_t":$backward_peak_bytes,
    "int64_t":$optimizer_peak_bytes,
    "int64_t":$layer_activation_bytes,
    "int64_t":$checkpointed_layer_bytes,
    "int64_t":$head_activation_bytes,
    "int64_t":$host_bytes,
    Swift_DoubleParameter:$step_seconds,
    Swift_DoubleParameter:$compute_seconds,
    Swift_DoubleParameter:$recompute_seconds,
    Swift_DoubleParameter:$communication_seconds,
    Swift_DoubleParameter:$exposed_communication_seconds,
    Swift_DoubleParameter:$offload_seconds,
    Swift_DoubleParameter:$optimizer_seconds,
    Swift_DoubleParameter:$tokens_per_second,
    Swift_DoubleParameter:$mfu,
    OptionalParameter<"::mlir::ArrayAttr", "#swift.memory_point list, in step order">:$timeline,
    DefaultValuedParameter<"int64_t", "0">:$offloaded_activation_bytes,
    Swift_OptionalDoubleParameter:$activation_copy_seconds,
    Swift_OptionalDoubleParameter:$activation_offload_seconds,
    Swift_OptionalDoubleParameter:$pipeline_bubble_seconds);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // SWIFT_DIALECT_SWIFTATTRS_TD
