//===- SwiftOps.td - swift dialect operations --------------*- tablegen -*-===//

#ifndef SWIFT_DIALECT_SWIFTOPS_TD
#define SWIFT_DIALECT_SWIFTOPS_TD

include "swift/Dialect/SwiftDialect.td"
include "swift/Dialect/SwiftAttrs.td"
include "swift/Dialect/SwiftInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Job structure: cluster, job, model.
//===----------------------------------------------------------------------===//

def Swift_ClusterOp : Swift_Op<"cluster", [Symbol, HasParent<"ModuleOp">]> {
  let summary = "the GPUs a job runs on";
  let description = [{
    A module-level symbol naming the hardware: `nodes` machines of
    `gpus_per_node` GPUs each, the links inside and between nodes, and the
    host memory of one node. `measured` (`#swift.measured<...>`) holds rates
    measured on the real machine (a hardware profile), which replace the
    datasheet numbers times typical efficiencies.

    ```mlir
    swift.cluster @cluster nodes 2 x 8 gpu #swift.gpu<...>
        intra_node #swift.link<...> inter_node #swift.link<...>
        host_memory 549755813888
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<I64Attr, [IntPositive]>:$nodes,
    ConfinedAttr<I64Attr, [IntPositive]>:$gpus_per_node,
    Swift_GpuAttr:$gpu,
    Swift_LinkAttr:$intra_node,
    Swift_LinkAttr:$inter_node,
    ConfinedAttr<I64Attr, [IntPositive]>:$host_memory,
    OptionalAttr<Swift_MeasuredRatesAttr>:$measured);
  let assemblyFormat = [{
    $sym_name `nodes` $nodes `x` $gpus_per_node `gpu` $gpu
    `intra_node` $intra_node `inter_node` $inter_node
    `host_memory` $host_memory attr-dict
  }];
  let extraClassDeclaration = [{
    int64_t getNumGpus() { return getNodes() * getGpusPerNode(); }
    /// The cluster in cost-model terms: the GPU's and links' numbers and
    /// the measured rates.
    ::swift::cost::Hardware hardware();
  }];
}

def Swift_JobOp : Swift_Op<"job", [Symbol, HasParent<"ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a training job: which model, on which cluster, how";
  let description = [{
    Training hyper-parameters of the job. `micro_batch_size` absent means the
    planner chooses it; `global_batch_size` sequences are consumed per
    optimizer step whatever the micro-batch, in `gradient_accumulation`
    micro-steps per data-parallel rank (global = micro x accumulation x
    data-parallel ranks, the GPUs / the strategy's tp x pp x cp), which
    swift-choose-strategy records with the micro-batch. The strategy's
    layout degrees divide the cluster's GPUs, and each candidate's
    #swift.mesh spans them with its `stage_layers` summing to the model's
    decoder layers. `decision` (the
    search: chosen, closest, runners-up) and `estimate` (memory and time of
    the strategy) are what swift-choose-strategy and swift-estimate-cost
    found; the report and the emitters read them. `packing` (default true,
    printed only when false): JSONL samples are packed into windows of
    `sequence_length` rather than padded one per window (swift-run).
    `truncation` (`#swift.truncation<...>`, absent: drop) and `loss_on`
    (`#swift.loss_on<...>`, absent: assistant): what a JSONL sample longer
    than `sequence_length` becomes, and which tokens of a text sample are
    trained on (training.truncation / training.loss_on).
    `optimizer_settings` (`#swift.adamw<...>`): the AdamW hyper-parameters,
    lr schedule, gradient clipping and seed; absent means plan.json's
    defaults. `counts` (`#swift.counts<...>`): the parameters and tokens
    per step swift-annotate-model counted.

    ```mlir
    swift.job @job trains @llama on @cluster {
      sequence_length = 4096 : i64, global_batch_size = 128 : i64,
      precision = #swift.precision<bf16_mixed>, optimizer = #swift.optimizer<adamw>,
      method = #swift.method<full>, backend = #swift.backend<swift_run>,
      strategy = #swift.strategy<>}
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$model,
    FlatSymbolRefAttr:$cluster,
    ConfinedAttr<I64Attr, [IntPositive]>:$sequence_length,
    ConfinedAttr<I64Attr, [IntPositive]>:$global_batch_size,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$micro_batch_size,
    Swift_PrecisionAttr:$precision,
    Swift_OptimizerAttr:$optimizer,
    Swift_MethodAttr:$method,
    OptionalAttr<Swift_LoraAttr>:$lora,
    Swift_BackendAttr:$backend,
    Swift_StrategyAttr:$strategy,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$gradient_accumulation,
    OptionalAttr<Swift_DecisionAttr>:$decision,
    OptionalAttr<Swift_EstimateAttr>:$estimate,
    DefaultValuedAttr<BoolAttr, "true">:$packing,
    OptionalAttr<Swift_OptimizerSettingsAttr>:$optimizer_settings,
    OptionalAttr<Swift_TruncationAttr>:$truncation,
    OptionalAttr<Swift_LossOnAttr>:$loss_on,
    OptionalAttr<Swift_CountsAttr>:$counts);
  let assemblyFormat = "$sym_name `trains` $model `on` $cluster attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getTokensPerStep() {
      return getSequenceLength() * getGlobalBatchSize();
    }
    /// The swift.model and swift.cluster the job names, null when its
    /// module has no such symbol.
    ModelOp lookupModel();
    ClusterOp lookupCluster();
    /// The job's swift.schedule (the last one for it in its module), null
    /// before swift-materialize-units ran.
    ScheduleOp lookupSchedule();
    /// The job's fixed setup (backend, precision, method, LoRA, global
    /// batch, clipping) in cost-model terms.
    ::swift::cost::TrainingSetup trainingSetup();
    /// The job's strategy when every decision is made; otherwise nullopt
    /// with `missing` naming the open ones ("strategy.zero,
    /// training.micro_batch_size"); the micro-batch and gradient
    /// accumulation are the job's (swift-choose-strategy records both).
    /// An open layout key (tp, pp, ...) is the trivial layout; dp_shard
    /// (HSDP's shard groups, which the search chooses on several nodes)
    /// becomes the layout's dpShard. A layout the cost model does not price
    /// (unpricedLayout()) gives nullopt with `missing` empty.
    std::optional<::swift::cost::Strategy> fixedStrategy(std::string &missing);
    /// Why the job's backend cannot run the strategy's layout, as
    /// "FIELD: message" naming the first key set to a non-trivial value
    /// (tp, pp or cp > 1, a pipeline schedule, virtual_stages > 1) and its
    /// value, on backends other than torchtitan and megatron (which run
    /// and price every layout key, fixedStrategy() reading them); empty
    /// when the layout is priced (dp_shard always is: each backend runs
    /// shard groups or says why not, cost::unsupportedReason).
    std::string unpricedLayout();
    /// fixedStrategy(), or an error on the job saying why not: the layout
    /// the cost model does not price yet, or "strategy is not complete
    /// (open: ...); `whenOpen`".
    ::mlir::FailureOr<::swift::cost::Strategy> completeStrategy(
        ::llvm::StringRef whenOpen);
  }];
}

def Swift_ModelOp : Swift_Op<"model", [Symbol, HasParent<"ModuleOp">,
    IsolatedFromAbove, SingleBlock]> {
  let summary = "an LLM as tensor-level ops";
  let description = [{
    The body's block arguments are the token ids and the labels of one
    micro-batch (`tensor<?xSxi64>`); it ends with the loss. Identical decoder
    layers are one `swift.repeat`. `weights` names the HF model directory
    (safetensors) whose values the parameters start from; absent: random.
    `source` is where other stacks (HF, ms-swift) load the model from: the
    HF model directory the job named when it holds weights, or a preset's
    HF Hub id; absent otherwise (a bare config.json, a model written
    inline).

    ```mlir
    swift.model @tiny {
    ^bb0(%ids: tensor<?x8xi64>, %labels: tensor<?x8xi64>):
      %table = swift.param "model.embed_tokens.weight" : tensor<32x16xbf16>
      ...
      %loss = swift.cross_entropy %logits, %labels : ...
      swift.loss %loss : tensor<f32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       StrAttr:$architecture,
                       OptionalAttr<StrAttr>:$weights,
                       OptionalAttr<StrAttr>:$source);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `(` $architecture `)` attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Total parameters, each repeated layer counted once per repeat and a
    /// parameter used twice (tied embeddings) counted once.
    int64_t getNumParameters();
    /// Parameters that receive gradients under `method` (all for full
    /// fine-tuning; the adapters' for LoRA/QLoRA).
    int64_t getNumTrainableParameters(Method method, LoraAttr lora);
    /// The op that ends the body and names the loss.
    LossOp getLossOp();
    /// The cost model's compact view of the model: every op read through
    /// CostOpInterface, before, inside and after the (single) decoder-layer
    /// repeat, with FLOPs, saved tensors and parameters. `job` decides which
    /// linears carry LoRA adapters.
    ::swift::cost::ModelProfile profile(JobOp job);
    /// plan.json's model section as the ops spell it: the embedding table's
    /// and the projections' shapes, the attention and rotary attributes,
    /// which optional parameters exist (a model without an lm_head linear
    /// ties it to the embedding table), the layers of its repeats.
    /// `mlpBias`, when given, is set to whether the MLP has biases, which
    /// plan.json cannot express.
    ::swift::plan::ModelConfig planModel(bool *mlpBias = nullptr);
  }];
}

def Swift_LossOp : Swift_Op<"loss", [HasParent<"ModelOp">, Terminator]> {
  let summary = "marks the scalar the model is trained to minimize";
  let description = [{
    ```mlir
    swift.loss %loss : tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = "$loss attr-dict `:` type($loss)";
}

//===----------------------------------------------------------------------===//
// Parameters and layer repetition.
//===----------------------------------------------------------------------===//

def Swift_ParamOp : Swift_Op<"param", [Pure]> {
  let summary = "a learnable weight";
  let description = [{
    Named like the HF checkpoint's tensor (relative to its layer inside a
    `swift.repeat`). A parameter used by two ops (tied embeddings) exists
    once.

    ```mlir
    %w = swift.param "self_attn.q_proj.weight" : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    int64_t getNumElements() { return getType().getNumElements(); }
  }];
}

def Swift_RepeatOp : Swift_Op<"repeat", [SingleBlock, RecursiveMemoryEffects,
    AllTypesMatch<["init", "result"]>]> {
  let summary = "identical decoder layers applied in sequence";
  let description = [{
    Applies the body `count` times, feeding each result into the next
    application; the body is one decoder layer with its own parameters.
    `first_layer` is the index of the first application, so that layers
    split across several repeats (to checkpoint only the first k, say) keep
    their names.

    ```mlir
    %h = swift.repeat 32 layers from 0 (%x) : tensor<?x4096x4096xbf16> {
    ^bb0(%in: tensor<?x4096x4096xbf16>):
      ...
      swift.yield %out : tensor<?x4096x4096xbf16>
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$count,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$first_layer,
                       AnyRankedTensor:$init);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $count `layers` `from` $first_layer `(` $init `)` attr-dict `:` type($result) $body
  }];
  let hasRegionVerifier = 1;
}

def Swift_YieldOp : Swift_Op<"yield", [Pure, Terminator,
    HasParent<"RepeatOp">, ReturnLike]> {
  let summary = "the output of one decoder layer";
  let description = [{
    ```mlir
    swift.yield %out : tensor<?x4096x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Tensor ops of a decoder-only transformer. Activations are [batch, seq, dim]
// with a dynamic batch; weights follow HF's [out, in] layout.
//===----------------------------------------------------------------------===//

class Swift_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Swift_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Swift_CostOpInterface,
                                  ["getBackwardFlopsPerSample"]>])> {
  let hasVerifier = 1;
}

def Swift_EmbeddingOp : Swift_ComputeOp<"embedding"> {
  let summary = "token embedding lookup";
  let description = [{
    ```mlir
    %x = swift.embedding %ids, %table
        : (tensor<?x4096xi64>, tensor<128256x4096xbf16>) -> tensor<?x4096x4096xbf16>
    ```
  }];
  let arguments = (ins 2DTensorOf<[AnyInteger]>:$ids,
                       2DTensorOf<[AnyFloat]>:$table);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Swift_RMSNormOp : Swift_ComputeOp<"rmsnorm"> {
  let summary = "root-mean-square layer norm with a learned scale";
  let description = [{
    Normalizes over the last dimension. A weight shorter than that dimension
    normalizes each group of its size (Qwen3's per-head q/k norm).

    ```mlir
    %y = swift.rmsnorm %x, %w {epsilon = 1.0e-05 : f64}
        : (tensor<?x4096x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096x4096xbf16>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$input,
                       1DTensorOf<[AnyFloat]>:$weight,
                       F64Attr:$epsilon);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Swift_LinearOp : Swift_ComputeOp<"linear"> {
  let summary = "y = x W^T (+ b)";
  let description = [{
    ```mlir
    %q = swift.linear %x, %wq, %bq
        : (tensor<?x4096x896xbf16>, tensor<896x896xbf16>, tensor<896xbf16>)
        -> tensor<?x4096x896xbf16>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$input,
                       2DTensorOf<[AnyFloat]>:$weight,
                       Optional<1DTensorOf<[AnyFloat]>>:$bias);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    int64_t getInFeatures() { return getWeight().getType().getDimSize(1); }
    int64_t getOutFeatures() { return getWeight().getType().getDimSize(0); }
    /// The weight's parameter name, or "" when it is not a swift.param.
    ::llvm::StringRef getWeightName();
  }];
}

def Swift_RopeOp : Swift_ComputeOp<"rope", [SameOperandsAndResultType]> {
  let summary = "rotary position embedding of queries or keys";
  let description = [{
    ```mlir
    %qr = swift.rope %q {num_heads = 32 : i64, head_dim = 128 : i64,
                         theta = 5.0e+05 : f64} : tensor<?x4096x4096xbf16>
    ```

    `scaling`, when present, rescales the frequencies as HF's `rope_scaling`
    says (Llama 3.1: `llama3`, factor 8).
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       F64Attr:$theta,
                       OptionalAttr<Swift_RopeScalingAttr>:$scaling);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Swift_AttentionOp : Swift_ComputeOp<"attention"> {
  let summary = "scaled dot-product attention with grouped-query heads";
  let description = [{
    `num_heads` query heads share `num_kv_heads` key/value heads
    (`num_kv_heads` divides `num_heads`; equal for plain multi-head attention).

    ```mlir
    %a = swift.attention %q, %k, %v {num_heads = 32 : i64, num_kv_heads = 8 : i64,
                                     head_dim = 128 : i64, causal}
        : (tensor<?x4096x4096xbf16>, tensor<?x4096x1024xbf16>, tensor<?x4096x1024xbf16>)
        -> tensor<?x4096x4096xbf16>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$query,
                       3DTensorOf<[AnyFloat]>:$key,
                       3DTensorOf<[AnyFloat]>:$value,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       UnitAttr:$causal);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Swift_SiluMulOp : Swift_ComputeOp<"silu_mul", [SameOperandsAndResultType]> {
  let summary = "SwiGLU gate: silu(gate) * up";
  let description = [{
    ```mlir
    %m = swift.silu_mul %gate, %up : tensor<?x4096x14336xbf16>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$gate,
                       3DTensorOf<[AnyFloat]>:$up);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
  let hasVerifier = 0; // SameOperandsAndResultType says it all.
}

def Swift_AddOp : Swift_ComputeOp<"add", [SameOperandsAndResultType]> {
  let summary = "residual addition";
  let description = [{
    ```mlir
    %h = swift.add %x, %attn : tensor<?x4096x4096xbf16>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$lhs,
                       3DTensorOf<[AnyFloat]>:$rhs);
  let results = (outs 3DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "operands attr-dict `:` type($result)";
  let hasVerifier = 0; // SameOperandsAndResultType says it all.
}

def Swift_CrossEntropyOp : Swift_ComputeOp<"cross_entropy"> {
  let summary = "mean next-token cross-entropy of logits against labels";
  let description = [{
    Position t predicts label t+1 (labels are shifted inside, as HF does).

    ```mlir
    %loss = swift.cross_entropy %logits, %labels
        : (tensor<?x4096x128256xbf16>, tensor<?x4096xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins 3DTensorOf<[AnyFloat]>:$logits,
                       2DTensorOf<[AnyInteger]>:$labels);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

include "swift/Dialect/SwiftSchedule.td"

#endif // SWIFT_DIALECT_SWIFTOPS_TD
