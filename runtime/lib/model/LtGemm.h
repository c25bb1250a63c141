//===- LtGemm.h - bf16 GEMMs through cuBLASLt, algorithms timed once ------===//
//
// The decoder's GEMMs on CUDA (builds with the kernels): cuBLASLt instead of
// cublasGemmEx, for what GemmEx cannot do (a C that is not D: the residual
// add without a copy) and to run each shape with the fastest of the
// algorithms cuBLASLt's heuristic offers, timed on the device the first
// time the shape runs (cuBLAS's default is within -6% to +9% of the best,
// shape by shape: benchmarks/runtime/lt_sweep.cu).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace swift::rt::lt {

/// Column-major, as cuBLAS sees it: D (m, n) = op(A) op(B) + beta C with A
/// and B bf16, C and D bf16 (or fp32: `fp32Out`), fp32 accumulation. C has
/// D's layout; c == d updates D in place.
struct Problem {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const void *a = nullptr, *b = nullptr;
  int64_t lda = 0, ldb = 0;
  const void *c = nullptr;
  void *d = nullptr;
  int64_t ldd = 0;
  float beta = 0;
  bool fp32Out = false;
};

/// Runs `p` on the current stream; false when cuBLASLt offers no algorithm
/// for it (the caller takes another path). The first run of a shape that
/// does not read D (beta 0, or C != D) times the heuristic's candidates
/// and keeps the fastest for the process (SWIFT_KERNELS=-tune: its first
/// choice, untimed). Different shapes' choices may differ from run to run
/// by the timing's noise; a choice changes the result's last bits only.
bool matmul(const Problem &p);

} // namespace swift::rt::lt
