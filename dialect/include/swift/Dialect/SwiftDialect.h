//===- SwiftDialect.h - the swift dialect, its enums and attributes -------===//

#ifndef SWIFT_DIALECT_SWIFTDIALECT_H
#define SWIFT_DIALECT_SWIFTDIALECT_H

#include "swift/Job/MeasuredRates.h"
#include "swift/Plan/Enums.h"

#include "llvm/ADT/APFloat.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/Value.h"

namespace mlir::swift {
/// A real number in its shortest round-trip spelling, as an MLIR float
/// literal ("989.4", "3350.0", "1.0e-05").
std::string formatReal(const llvm::APFloat &value);

// The plan layer's enums (swift/Plan/Enums.h) are the dialect's enums.
using ::swift::plan::Backend;
using ::swift::plan::Checkpointing;
using ::swift::plan::Collective;
using ::swift::plan::ContextParallel;
using ::swift::plan::irKeyword;
using ::swift::plan::LossOn;
using ::swift::plan::LrDecay;
using ::swift::plan::Method;
using ::swift::plan::Offload;
using ::swift::plan::Optimizer;
using ::swift::plan::OptimizerDevice;
using ::swift::plan::PipelineSchedule;
using ::swift::plan::Precision;
using ::swift::plan::RopeType;
using ::swift::plan::Truncation;
using ::swift::plan::UnitKind;

/// Whether E is one of the plan layer's enums.
template <typename E, typename = void> struct IsPlanEnum : std::false_type {};
template <typename E>
struct IsPlanEnum<E, std::void_t<decltype(::swift::plan::EnumTraits<E>::kWhat)>>
    : std::true_type {};
} // namespace mlir::swift

namespace swift::plan {
/// Prints a plan enum as its IR keyword (found by argument-dependent lookup
/// from the attribute printers ODS generates).
template <typename E,
          std::enable_if_t<::mlir::swift::IsPlanEnum<E>::value, int> = 0>
::mlir::AsmPrinter &operator<<(::mlir::AsmPrinter &printer, E value) {
  printer << irKeyword(value);
  return printer;
}
} // namespace swift::plan

namespace mlir {
/// Parses a plan enum from its IR keyword.
template <typename E>
struct FieldParser<E, std::enable_if_t<swift::IsPlanEnum<E>::value, E>> {
  static FailureOr<E> parse(AsmParser &parser) {
    llvm::SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (succeeded(parser.parseOptionalKeyword(&keyword)))
      if (std::optional<E> value = ::swift::plan::parseIrKeyword<E>(keyword))
        return *value;
    std::string choices;
    for (const auto &s : ::swift::plan::EnumTraits<E>::kSpellings)
      choices += (choices.empty() ? "" : ", ") + ::swift::plan::irKeywordOf(s);
    return parser.emitError(loc, "expected ")
           << ::swift::plan::EnumTraits<E>::kWhat << " (" << choices << ")";
  }
};
/// The same, absent when no keyword follows (an open strategy decision).
template <typename E>
struct FieldParser<std::optional<E>,
                   std::enable_if_t<swift::IsPlanEnum<E>::value, std::optional<E>>> {
  static FailureOr<std::optional<E>> parse(AsmParser &parser) {
    llvm::SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (failed(parser.parseOptionalKeyword(&keyword)))
      return std::optional<E>();
    if (std::optional<E> value = ::swift::plan::parseIrKeyword<E>(keyword))
      return std::optional<E>(*value);
    return parser.emitError(loc, "unknown ")
           << ::swift::plan::EnumTraits<E>::kWhat << " '" << keyword << "'";
  }
};
} // namespace mlir

#include "swift/Dialect/SwiftOpsDialect.h.inc"
#include "swift/Dialect/SwiftEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "swift/Dialect/SwiftAttrs.h.inc"

namespace mlir::swift {
/// The discardable attribute swift-estimate-cost records on each op with
/// CostOpInterface (#swift.op_cost); the dialect refuses it anywhere else,
/// and any other `swift.` discardable attribute.
inline constexpr llvm::StringLiteral kOpCostAttrName = "swift.cost";
/// `op`'s recorded cost, null before swift-estimate-cost.
inline OpCostAttr getOpCost(Operation *op) {
  return op->getAttrOfType<OpCostAttr>(kOpCostAttrName);
}
inline void setOpCost(Operation *op, OpCostAttr cost) {
  op->setAttr(kOpCostAttrName, cost);
}
} // namespace mlir::swift

namespace mlir::swift {

/// A tensor autograd keeps from an op's forward for its backward, per sample.
/// `value` identifies tensors that several ops save (the input of q/k/v
/// projections is kept once); it is null for tensors private to the op (the
/// softmax statistics of attention, say).
struct SavedTensor {
  llvm::StringRef what;
  Value value;
  int64_t elementsPerSample;
  unsigned bitWidth;

  int64_t bytesPerSample() const { return elementsPerSample * bitWidth / 8; }
};

} // namespace mlir::swift

#include "swift/Dialect/SwiftInterfaces.h.inc"

namespace mlir::swift {
/// `custom<PlanEnum>($attr)` in an op's format: a plan-enum attribute as its
/// keyword alone.
template <typename AttrT>
ParseResult parsePlanEnum(OpAsmParser &parser, AttrT &attr) {
  using E = decltype(std::declval<AttrT>().getValue());
  FailureOr<E> value = FieldParser<E>::parse(parser);
  if (failed(value))
    return failure();
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}
template <typename AttrT>
void printPlanEnum(OpAsmPrinter &printer, Operation *, AttrT attr) {
  printer << ::swift::plan::irKeyword(attr.getValue());
}
} // namespace mlir::swift

#endif // SWIFT_DIALECT_SWIFTDIALECT_H
