//===- PlanTypes.h - the plan schema's names inside the runtime -*- C++ -*-===//
//
// The runtime executes swift::plan::Plan (swift/Plan/Plan.h, its one
// dependency inside this repository) and speaks its types unqualified.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "swift/Plan/Plan.h"
#include "swift/Runtime/core/Check.h"

namespace swift::rt {
using plan::checkPlanMatchesWorld;
using plan::Checkpointing;
using plan::lrAt;
using plan::LoraConfig;
using plan::LrDecay;
using plan::Method;
using plan::ModelConfig;
using plan::Offload;
using plan::OptimizerConfig;
using plan::parsePlan;
using plan::parsePlanText;
using plan::Plan;
using plan::planToJson;
using plan::Precision;
using plan::ProgramStep;
using plan::Schedule;
using plan::StrategyConfig;
using plan::toString;
using plan::TrainingConfig;
using plan::unitOwners;
using plan::unitParameterCount;
} // namespace swift::rt
