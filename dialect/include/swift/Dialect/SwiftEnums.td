//===- SwiftEnums.td - enums of jobs and strategies --------*- tablegen -*-===//

#ifndef SWIFT_DIALECT_SWIFTENUMS_TD
#define SWIFT_DIALECT_SWIFTENUMS_TD

include "swift/Dialect/SwiftDialect.td"
include "mlir/IR/EnumAttr.td"

include "mlir/IR/AttrTypeBase.td"

//===----------------------------------------------------------------------===//
// Enums of jobs, plans and schedules. Each is declared once, with its
// spellings, in the plan layer (swift/Plan/Enums.h); these attributes wrap
// those C++ types and list no case here. The IR keyword is the plan spelling
// with '-' and '+' written '_' (bf16_mixed, optimizer_params, swift_run).
//===----------------------------------------------------------------------===//

// An attribute holding one value of the plan enum `cppName`, printed as
// #swift.<mnemonic><value> (e.g. #swift.precision<bf16_mixed>); schedule ops
// print theirs as the keyword alone through `custom<PlanEnum>`
// (`swift.bucket 0 units [3] reduce_scatter`, as arith.cmpi's predicate). The op
// accessors return the enum value; the parser and printer are FieldParser /
// operator<< in SwiftDialect.h, over the plan layer's table.
class Swift_PlanEnumAttr<string cppName, string attrMnemonic, string desc>
    : AttrDef<Swift_Dialect, cppName> {
  let mnemonic = attrMnemonic;
  let summary = desc;
  let description = "One value of `swift::plan::" # cppName # "` "
                    # "(plan/include/swift/Plan/Enums.h), spelled as there "
                    # "with '-' and '+' written '_'.";
  let parameters = (ins AttrParameter<"::swift::plan::" # cppName, desc>:$value);
  let assemblyFormat = "`<` $value `>`";
  let returnType = "::swift::plan::" # cppName;
  let convertFromStorage = "$_self.getValue()";
  let constBuilderCall =
      "::mlir::swift::" # cppName # "Attr::get($_builder.getContext(), $0)";
}

def Swift_PrecisionAttr
    : Swift_PlanEnumAttr<"Precision", "precision", "numeric precision of training">;
def Swift_OptimizerAttr
    : Swift_PlanEnumAttr<"Optimizer", "optimizer", "optimizer">;
def Swift_MethodAttr
    : Swift_PlanEnumAttr<"Method", "method", "which weights are trained">;
def Swift_TruncationAttr
    : Swift_PlanEnumAttr<"Truncation", "truncation",
                         "what a sample longer than sequence_length becomes">;
def Swift_LossOnAttr
    : Swift_PlanEnumAttr<"LossOn", "loss_on",
                         "which tokens of a text sample are trained on">;
def Swift_BackendAttr
    : Swift_PlanEnumAttr<"Backend", "backend", "the implementation that trains">;
def Swift_OffloadAttr
    : Swift_PlanEnumAttr<"Offload", "offload", "what lives in host memory">;
def Swift_CheckpointingAttr
    : Swift_PlanEnumAttr<"Checkpointing", "checkpointing",
                         "activation checkpointing of decoder layers">;
def Swift_UnitKindAttr
    : Swift_PlanEnumAttr<"UnitKind", "unit_kind",
                         "the part of the model a schedule unit holds">;
def Swift_CollectiveAttr
    : Swift_PlanEnumAttr<"Collective", "collective",
                         "how a bucket's gradients are reduced">;
def Swift_OptimizerDeviceAttr
    : Swift_PlanEnumAttr<"OptimizerDevice", "optimizer_device",
                         "where the optimizer step runs">;

//===----------------------------------------------------------------------===//
// Enums of the IR alone (no job or plan.json spelling): the ZeRO stage as
// the strategy attribute prints it, and the schedule's streams, phases and
// copies.
//===----------------------------------------------------------------------===//

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

#endif // SWIFT_DIALECT_SWIFTENUMS_TD
