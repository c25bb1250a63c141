//===- MeasuredRates.h - a hardware profile's rates -------------*- C++ -*-===//
//
// The rates measured on the real machine (a hardware profile file, which
// benchmarks/hardware/measure_profile.py writes): the one struct the job
// reader fills, the importer writes into the IR (#swift.measured on
// swift.cluster), and the cost model prices with (cost::Hardware). Plain
// C++, no dependency.
//
//===----------------------------------------------------------------------===//

#ifndef SWIFT_JOB_MEASUREDRATES_H
#define SWIFT_JOB_MEASUREDRATES_H

#include <array>

namespace swift::job {

/// Each rate replaces the datasheet number times a typical efficiency; 0
/// means "not measured" (a profile's rates are positive).
struct MeasuredRates {
  double matmulTflops = 0, attentionTflops = 0, elementwiseGBps = 0;
  double hostLinkGBps = 0, intraNodeBusGBps = 0, interNodeBusGBps = 0;
  double collectiveLatencyUs = 0, cpuAdamNsPerParam = 0;

  /// One rate: its key in a profile file (and the IR), with the unit in
  /// the name, and its field. A time (latency, ns per parameter) need only
  /// be finite and at most 1e6; the others are hardware quantities.
  struct Rate {
    const char *key;
    double MeasuredRates::*field;
    bool isTime;
  };
  /// Every rate a profile may give, in this order.
  static constexpr std::array<Rate, 8> kRates = {{
      {"matmul_tflops", &MeasuredRates::matmulTflops, false},
      {"attention_tflops", &MeasuredRates::attentionTflops, false},
      {"elementwise_gbps", &MeasuredRates::elementwiseGBps, false},
      {"host_link_gbps", &MeasuredRates::hostLinkGBps, false},
      {"intra_node_bus_gbps", &MeasuredRates::intraNodeBusGBps, false},
      {"inter_node_bus_gbps", &MeasuredRates::interNodeBusGBps, false},
      {"collective_latency_us", &MeasuredRates::collectiveLatencyUs, true},
      {"cpu_adam_ns_per_param", &MeasuredRates::cpuAdamNsPerParam, true},
  }};

  /// Whether any rate was measured.
  bool any() const {
    for (const Rate &r : kRates)
      if (this->*r.field > 0)
        return true;
    return false;
  }
};

} // namespace swift::job

#endif // SWIFT_JOB_MEASUREDRATES_H
