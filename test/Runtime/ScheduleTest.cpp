//===- ScheduleTest.cpp - swift-run executes plan.json's schedule ---------===//
//
// The engine takes its decisions from the plan's "schedule", not from the
// "strategy" summary: a schedule the rules accept but that differs from the
// derived one (swift-run --emit-plan writes that) runs as written. Observed
// through the metrics' per-step count of the collectives the engine issued
// ("collectives") and through the losses, which are the derived schedule's
// up to the order of the sums (kLossTol, EndToEndTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "RunPlan.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <tuple>

using namespace swift::rt::testing;

namespace {

constexpr int kAccumulation = 3;
constexpr int kSteps = 3;

/// tinyPlan with `kAccumulation` micro-batches per step.
json accumulatingPlan(int zero, int world) {
  json p = tinyPlan(zero, world);
  p["training"]["gradient_accumulation"] = kAccumulation;
  p["training"]["global_batch_size"] = 2 * world * kAccumulation;
  return p;
}

/// The plan with its derived schedule spelled out (swift-run --emit-plan).
json withDerivedSchedule(const json &plan) {
  Result r = runPlan(plan, "--emit-plan full.json");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return json::parse(slurp(r.dir + "/full.json"));
}

class EveryMicroBatch
    : public ::testing::TestWithParam<std::tuple<int, int>> {};

// ZeRO-0/1 accumulate whole gradients, so the derived schedule reduces each
// bucket on the last micro-batch only; reducing a bucket every micro-batch
// instead is valid (a micro-batch buffer, the reduction added into the
// accumulator or the shard). The runtime runs those buckets' reductions on
// every micro-batch and trains the same model. (Before the engine read the
// schedule, the rules refused such a plan: exit 2.)
TEST_P(EveryMicroBatch, BucketsReducedEveryMicroBatchRunAsWritten) {
  const auto [zero, world] = GetParam();
  const json derived = withDerivedSchedule(accumulatingPlan(zero, world));
  ASSERT_TRUE(derived.contains("schedule"));
  const json &buckets = derived["schedule"]["buckets"];
  ASSERT_GE(buckets.size(), 3u) << "the test leaves a bucket as derived";
  for (const json &b : buckets)
    ASSERT_FALSE(b.at("every_micro_batch").get<bool>());
  // The first and the last bucket (the head's and the tied embedding's
  // gradients among them) every micro-batch, the others as derived.
  json changed = derived;
  int64_t unitsChanged = 0;
  for (size_t b : {size_t(0), buckets.size() - 1}) {
    changed["schedule"]["buckets"][b]["every_micro_batch"] = true;
    unitsChanged += int64_t(buckets[b]["units"].size());
  }

  const std::string args =
      "--steps " + std::to_string(kSteps) + " --nproc-per-node " +
      std::to_string(world);
  Result ref = runPlan(derived, args);
  Result got = runPlan(changed, args);
  ASSERT_EQ(ref.exitCode, 0) << ref.output;
  ASSERT_EQ(got.exitCode, 0) << got.output;

  // (i) The changed buckets' units are reduced on each of the step's
  // micro-batches, the others' on the last one: G - 1 more reductions per
  // unit of those buckets, with the stage's collective.
  const char *reduce = zero == 0 ? "all_reduce" : "reduce_scatter";
  const std::vector<int64_t> a = collectives(ref, reduce),
                             c = collectives(got, reduce);
  ASSERT_EQ(a.size(), size_t(kSteps));
  ASSERT_EQ(c.size(), size_t(kSteps));
  const int64_t numUnits =
      derived["model"]["num_hidden_layers"].get<int64_t>() + 2;
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_EQ(a[s], numUnits) << "step " << s + 1; // each unit once
    EXPECT_EQ(c[s] - a[s], (kAccumulation - 1) * unitsChanged)
        << "step " << s + 1;
  }
  // Nothing else changes: the same parameter all-gathers.
  EXPECT_EQ(collectives(ref, "all_gather"), collectives(got, "all_gather"));

  // (ii) The same training, up to the order of the sums.
  expectSameLosses(ref, got, kLossTol,
                   "zero " + std::to_string(zero) + " world " +
                       std::to_string(world));
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(got.metrics[s].at("grad_norm").get<double>(),
                ref.metrics[s].at("grad_norm").get<double>(),
                1e-5 * ref.metrics[s].at("grad_norm").get<double>())
        << "step " << s + 1;
}

// World 1 at ZeRO-0 is where the derived schedule updates each unit during
// the backward: a unit of a bucket reduced every micro-batch is updated
// after the backward instead (its gradient is final only after the last
// reduction).
INSTANTIATE_TEST_SUITE_P(Stages, EveryMicroBatch,
                         ::testing::Values(std::make_tuple(0, 1),
                                           std::make_tuple(0, 2),
                                           std::make_tuple(1, 2)));

} // namespace
