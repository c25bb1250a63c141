//===- SwiftEnums.td - enums of jobs and strategies --------*- tablegen -*-===//

#ifndef SWIFT_DIALECT_SWIFTENUMS_TD
#define SWIFT_DIALECT_SWIFTENUMS_TD

include "swift/Dialect/SwiftDialect.td"
include "mlir/IR/EnumAttr.td"

// Printed as #swift.<mnemonic><value>, e.g. #swift.precision<bf16_mixed>.
class Swift_EnumAttr<EnumAttrInfo info, string mnemonic>
    : EnumAttr<Swift_Dialect, info, mnemonic> {
  let assemblyFormat = "`<` $value `>`";
}

def Swift_Precision : I32EnumAttr<"Precision", "numeric precision of training", [
    // bf16 compute with fp32 master weights and fp32 optimizer states.
    I32EnumAttrCase<"bf16_mixed", 0>,
    // Parameters, gradients and optimizer states all in bf16.
    I32EnumAttrCase<"bf16", 1>,
    I32EnumAttrCase<"fp32", 2>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_PrecisionAttr : Swift_EnumAttr<Swift_Precision, "precision">;

def Swift_Optimizer : I32EnumAttr<"Optimizer", "optimizer", [
    I32EnumAttrCase<"adamw", 0>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_OptimizerAttr : Swift_EnumAttr<Swift_Optimizer, "optimizer">;

def Swift_Method : I32EnumAttr<"Method", "which weights are trained", [
    I32EnumAttrCase<"full", 0>,
    // Low-rank adapters over a frozen bf16 base.
    I32EnumAttrCase<"lora", 1>,
    // Low-rank adapters over a frozen 4-bit NF4 base.
    I32EnumAttrCase<"qlora", 2>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_MethodAttr : Swift_EnumAttr<Swift_Method, "method">;

def Swift_Backend : I32EnumAttr<"Backend", "the implementation that trains", [
    I32EnumAttrCase<"swift_run", 0>,
    // HF transformers + PyTorch (single process/DDP, FSDP2).
    I32EnumAttrCase<"hf", 1>,
    I32EnumAttrCase<"deepspeed", 2>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_BackendAttr : Swift_EnumAttr<Swift_Backend, "backend">;

def Swift_ZeroStage : I32EnumAttr<"ZeroStage", "ZeRO sharding stage", [
    // Replicated model states; gradients all-reduced.
    I32EnumAttrCase<"zero0", 0>,
    // Optimizer states sharded.
    I32EnumAttrCase<"zero1", 1>,
    // Optimizer states and gradients sharded.
    I32EnumAttrCase<"zero2", 2>,
    // Optimizer states, gradients and parameters sharded.
    I32EnumAttrCase<"zero3", 3>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_ZeroStageAttr : Swift_EnumAttr<Swift_ZeroStage, "zero">;

def Swift_Offload : I32EnumAttr<"Offload", "what lives in host memory", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"optimizer", 1>,
    I32EnumAttrCase<"optimizer_params", 2>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_OffloadAttr : Swift_EnumAttr<Swift_Offload, "offload">;

def Swift_Checkpointing : I32EnumAttr<"Checkpointing",
    "activation checkpointing of decoder layers", [
    I32EnumAttrCase<"none", 0>,
    // Recompute the cheap, memory-hungry parts (attention internals,
    // activations of element-wise ops); keep matmul outputs.
    I32EnumAttrCase<"selective", 1>,
    // Keep only each layer's input; recompute the layer in backward.
    I32EnumAttrCase<"full", 2>]> {
  let cppNamespace = "::mlir::swift";
  let genSpecializedAttr = 0;
}
def Swift_CheckpointingAttr
    : Swift_EnumAttr<Swift_Checkpointing, "checkpointing">;

//===----------------------------------------------------------------------===//
// Schedule enums (SwiftSchedule.td). Their specialized attributes print as
// bare keywords inside ops (`swift.bucket 0 units [3] reduce_scatter`), as
// arith.cmpi's predicate does.
//===----------------------------------------------------------------------===//

def Swift_UnitKind : I32EnumAttr<"UnitKind",
    "the part of the model a schedule unit holds", [
    I32EnumAttrCase<"embedding", 0>,
    I32EnumAttrCase<"decoder", 1>,
    // Final norm, lm_head (unless tied) and the loss.
    I32EnumAttrCase<"head", 2>]> {
  let cppNamespace = "::mlir::swift";
}

def Swift_Collective : I32EnumAttr<"Collective",
    "how a bucket's gradients are reduced", [
    I32EnumAttrCase<"all_reduce", 0>,
    I32EnumAttrCase<"reduce_scatter", 1>]> {
  let cppNamespace = "::mlir::swift";
}

def Swift_Stream : I32EnumAttr<"Stream", "the stream an op is issued on", [
    I32EnumAttrCase<"compute", 0>,
    I32EnumAttrCase<"communication", 1>]> {
  let cppNamespace = "::mlir::swift";
}

def Swift_ProgramPhase : I32EnumAttr<"ProgramPhase",
    "the pass over the units a program describes", [
    I32EnumAttrCase<"forward", 0>,
    I32EnumAttrCase<"backward", 1>]> {
  let cppNamespace = "::mlir::swift";
}

def Swift_HostData : I32EnumAttr<"HostData",
    "model state moved between host and device", [
    I32EnumAttrCase<"params", 0>,
    I32EnumAttrCase<"grads", 1>]> {
  let cppNamespace = "::mlir::swift";
}

def Swift_CopyDirection : I32EnumAttr<"CopyDirection",
    "direction of a host<->device copy", [
    I32EnumAttrCase<"host_to_device", 0>,
    I32EnumAttrCase<"device_to_host", 1>]> {
  let cppNamespace = "::mlir::swift";
}

// Spelled like plan.json's "schedule.optimizer.device".
def Swift_OptimizerDevice : I32EnumAttr<"OptimizerDevice",
    "where the optimizer step runs", [
    I32EnumAttrCase<"accelerator", 0>,
    I32EnumAttrCase<"cpu", 1>]> {
  let cppNamespace = "::mlir::swift";
}

#endif // SWIFT_DIALECT_SWIFTENUMS_TD
