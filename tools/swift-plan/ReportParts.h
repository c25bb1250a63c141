//===- ReportParts.h - what the text, JSON and HTML reports share -*- C++ -*-===//
//
// Private to tools/swift-plan (Report.cpp, HtmlReport.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_TOOLS_SWIFT_PLAN_REPORTPARTS_H
#define SWIFT_TOOLS_SWIFT_PLAN_REPORTPARTS_H

#include "swift/Dialect/SwiftOps.h"

#include <string>

namespace swift::report {

/// "zero 3, offload none, checkpointing full, micro-batch 2 x 8 accumulation".
std::string describe(mlir::swift::CandidateAttr c);

/// The host memory per node the search let a strategy use.
int64_t usableHostBytes(mlir::swift::JobOp job, mlir::swift::DecisionAttr decision);

} // namespace swift::report

#endif // SWIFT_TOOLS_SWIFT_PLAN_REPORTPARTS_H
