//===- SwiftDialect.cpp - dialect registration and attributes -------------===//

#include "swift/Dialect/SwiftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <charconv>

using namespace mlir;
using namespace mlir::swift;

#include "swift/Dialect/SwiftOpsDialect.cpp.inc"
#include "swift/Dialect/SwiftEnums.cpp.inc"
#include "swift/Dialect/SwiftInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "swift/Dialect/SwiftAttrs.cpp.inc"

void SwiftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "swift/Dialect/SwiftOps.cpp.inc"
      >();
  registerAttributes();
}

void SwiftDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "swift/Dialect/SwiftAttrs.cpp.inc"
      >();
}

std::string mlir::swift::formatReal(const APFloat &value) {
  // Shortest form that reads back to the same double, made a valid MLIR
  // float literal (which needs a '.').
  char buffer[64];
  double x = value.convertToDouble();
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), x);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  if (text.find_first_of(".ni") == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Attribute verifiers
//===----------------------------------------------------------------------===//

LogicalResult GpuAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringRef name, int64_t memoryBytes,
                              APFloat bf16Tflops, APFloat hbmGbps,
                              APFloat hostLinkGbps, APFloat nvlinkGbps) {
  if (memoryBytes <= 0)
    return emitError() << "gpu '" << name << "': memory_bytes must be positive";
  auto positive = [](const APFloat &x) { return x.convertToDouble() > 0; };
  if (!positive(bf16Tflops) || !positive(hbmGbps) || !positive(hostLinkGbps))
    return emitError() << "gpu '" << name
                       << "': bf16_tflops, hbm_gbps and host_link_gbps must "
                          "be positive";
  if (nvlinkGbps.convertToDouble() < 0)
    return emitError() << "gpu '" << name
                       << "': nvlink_gbps must be >= 0 (0: no NVLink)";
  return success();
}

LogicalResult LinkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               StringRef name, APFloat bandwidthGbps,
                               APFloat latencyUs) {
  if (!(bandwidthGbps.convertToDouble() > 0))
    return emitError() << "link '" << name
                       << "': bandwidth_gbps must be positive";
  if (latencyUs.convertToDouble() < 0)
    return emitError() << "link '" << name << "': latency_us must be >= 0";
  return success();
}

LogicalResult LoraAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t rank, APFloat alpha,
                               ArrayAttr targets) {
  if (rank <= 0)
    return emitError() << "lora rank must be positive, got " << rank;
  if (!(alpha.convertToDouble() > 0))
    return emitError() << "lora alpha must be positive";
  if (targets.empty())
    return emitError() << "lora needs at least one target";
  if (!llvm::all_of(targets, [](Attribute a) { return isa<StringAttr>(a); }))
    return emitError() << "lora targets must be strings";
  return success();
}

bool LoraAttr::targets(StringRef weightName) const {
  // "model.layers.0.self_attn.q_proj.weight" -> "q_proj".
  StringRef module = weightName;
  module.consume_back(".weight");
  if (StringRef last = module.rsplit('.').second; !last.empty())
    module = last;
  for (auto target : getTargets().getAsRange<StringAttr>()) {
    if (target.getValue() == "all-linear" && module != "lm_head")
      return true;
    if (target.getValue() == module)
      return true;
  }
  return false;
}

LogicalResult
StrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     std::optional<ZeroStage> zero,
                     std::optional<Offload> offload,
                     std::optional<Checkpointing> checkpointing,
                     std::optional<int64_t> checkpointLayers,
                     std::optional<int64_t> bucketBytes,
                     std::optional<int64_t> prefetchDepth) {
  if (bucketBytes && *bucketBytes <= 0)
    return emitError() << "bucket_bytes must be positive";
  if (prefetchDepth && *prefetchDepth < 1)
    return emitError() << "prefetch_depth must be >= 1";
  if (!checkpointLayers)
    return success();
  if (*checkpointLayers < 0)
    return emitError() << "checkpoint_layers must be >= 0";
  if (checkpointing == Checkpointing::None)
    return emitError() << "checkpoint_layers needs checkpointing selective "
                          "or full, not none";
  return success();
}
