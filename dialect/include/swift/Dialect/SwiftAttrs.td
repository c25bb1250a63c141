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

// An enum that may be left open (absent): `auto` in a job file.
class Swift_OptionalEnumParameter<string cppType>
    : OptionalParameter<"std::optional<" # cppType # ">"> {
  let printer = "$_printer << *$_self";
}

def Swift_GpuAttr : Swift_Attr<"Gpu", "gpu"> {
  let summary = "one accelerator's capacity and speed";
  let description = [{
    Datasheet (or measured) numbers of one GPU. Bandwidths are GB/s (1e9
    bytes/s) in one direction.

    ```mlir
    #swift.gpu<name = "h100", memory_bytes = 85899345920, bf16_tflops = 989.4,
               hbm_gbps = 3350.0, host_link_gbps = 64.0, nvlink_gbps = 450.0>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"preset or user name">:$name,
    "int64_t":$memory_bytes,
    Swift_DoubleParameter:$bf16_tflops,
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

def Swift_LoraAttr : Swift_Attr<"Lora", "lora"> {
  let summary = "low-rank adapter settings";
  let description = [{
    `targets` names the linear layers that get adapters by the last part of
    their parameter name (`q_proj`, ...); `all-linear` means every linear
    layer inside the decoder layers (as peft does, the lm_head excluded).

    ```mlir
    #swift.lora<rank = 16, alpha = 32.0, targets = ["all-linear"]>
    ```
  }];
  let parameters = (ins
    "int64_t":$rank,
    Swift_DoubleParameter:$alpha,
    AttrParameter<"::mlir::ArrayAttr", "target layer names">:$targets);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether a linear layer with this parameter name gets an adapter.
    bool targets(::llvm::StringRef weightName) const;
  }];
}

def Swift_StrategyAttr : Swift_Attr<"Strategy", "strategy"> {
  let summary = "a training strategy, some decisions possibly still open";
  let description = [{
    An absent field is still to be decided by the planner (`auto` in the job
    file). `checkpoint_layers` restricts checkpointing to the first k decoder
    layers; `bucket_bytes` is the gradient bucket size and `prefetch_depth`
    how many units ZeRO-3 gathers ahead.

    ```mlir
    #swift.strategy<zero = zero3, checkpointing = full>
    ```
  }];
  let parameters = (ins
    Swift_OptionalEnumParameter<"::mlir::swift::ZeroStage">:$zero,
    Swift_OptionalEnumParameter<"::swift::plan::Offload">:$offload,
    Swift_OptionalEnumParameter<"::swift::plan::Checkpointing">:$checkpointing,
    OptionalParameter<"std::optional<int64_t>">:$checkpoint_layers,
    OptionalParameter<"std::optional<int64_t>">:$bucket_bytes,
    OptionalParameter<"std::optional<int64_t>">:$prefetch_depth);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // SWIFT_DIALECT_SWIFTATTRS_TD
