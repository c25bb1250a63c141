//===- Kernels.h - fused ops of the decoder and the loss ------------------===//
//
// Each op is one autograd node with a hand-written backward. On CUDA (when
// the runtime was built with its kernels, SWIFT_WITH_KERNELS) forward and
// backward are single fused kernels (lib/model/Kernels.cu); elsewhere the same
// formulas run as LibTorch ops (the reference the unit tests and the GPU
// check compare against). Model.cpp uses the fused ops on CUDA only; on CPU
// it keeps the plain op chain, so CI runs the math it always ran.
//
// linearCrossEntropy is the exception: it is LibTorch ops on every device
// and always used: the chunked loss never holds a (tokens, vocab) tensor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace swift::rt {

/// True when `x` is on CUDA, the kernels were compiled in and SWIFT_KERNELS
/// does not turn `op` off: "0" turns all off, a comma list of "-op" names
/// (norm, swiglu, rope, loss, adamw; normres: the residual's gradient in
/// the norm's backward; lt: the decoder's GEMMs through cuBLASLt; tune:
/// their algorithms timed (else cuBLASLt's first choice); sumsq:
/// clipping's sum of squares in one kernel; overlap: the update in
/// backward; ahead: swift-run queueing a step before reading the last;
/// lead: the next step's forward queued before the last step's backward is
/// done) those ops, for measuring each alone.
bool useFusedKernels(const at::Tensor &x, const char *op = "");
/// The SWIFT_KERNELS switch alone (any device): false when "0" or "-op".
bool kernelSwitchOn(const char *op);

/// RMSNorm over the last dim, HF rounding: bf16(x * rstd) * w.
at::Tensor fusedRmsNorm(const at::Tensor &x, const at::Tensor &w, double eps);
/// (fusedRmsNorm(x), x) for a decoder's residual stream, where x feeds both
/// the norm and the residual add: the second is x itself for the residual
/// branch, and one node takes both gradients, so RMSNorm's backward kernel
/// adds the residual's into x's gradient as it writes it (no autograd add
/// of two full-width gradients, bit-equal to it).
std::pair<at::Tensor, at::Tensor>
fusedRmsNormResidual(const at::Tensor &x, const at::Tensor &w, double eps);
/// silu(gate) * up of the packed gate/up projection (..., 2 I), gate in the
/// first half of each row; returns (..., I). Its gradient is packed the same
/// way, so the weight gradient of gate/up is one GEMM.
at::Tensor fusedSwiglu(const at::Tensor &gateUp);
/// Rotary embedding of x (B, S, H, D) with tables (S, D/2); returns
/// (B, S, H, D) contiguous.
at::Tensor fusedRope(const at::Tensor &x, const at::Tensor &cos,
                     const at::Tensor &sin);
/// Splits the packed q/k/v projection (B, S, (nh + 2 nkv) D) into q, k
/// (rotated) and v, each (B, S, heads, D) contiguous, in one pass; the
/// backward writes the packed gradient in one pass (no split, no cat).
std::vector<at::Tensor> fusedQkvRope(const at::Tensor &qkv,
                                     const at::Tensor &cos,
                                     const at::Tensor &sin, int64_t nh,
                                     int64_t nkv);

/// t as a contiguous (rows, last dim) matrix: the GEMMs' view of activations.
at::Tensor rows2d(const at::Tensor &t);

/// A linear's bias gradient: dy summed over its rows, in fp32 at least,
/// returned in `dtype`.
at::Tensor biasGradient(const at::Tensor &dy, at::ScalarType dtype);

/// Where a weight's gradient goes when the GEMM that computes it writes it
/// in place: a view of the flat gradient buffer in the weight's shape (its
/// dtype: fp32 in bf16-mixed) and whether to add to what it holds (else
/// overwrite). Called during backward, when the buffer is known to exist.
using GradSink = std::function<std::pair<at::Tensor, bool>()>;

/// x W^T + b. With a sink, W's gradient GEMM writes (or adds) straight into
/// the sink's buffer, fp32 from bf16 operands through cuBLAS, and autograd
/// gets no gradient for W: no separate gradient tensor, copy or add.
at::Tensor linear(const at::Tensor &x, const at::Tensor &w,
                  const at::Tensor &bias, const GradSink &sink = {});

/// table[ids]. With a sink, backward adds the rows' gradients straight into
/// the sink's buffer (after zeroing it when told to overwrite), summed per
/// distinct id in fp32 first and rounded once into the buffer's dtype, and
/// autograd gets no gradient for the table: no dense (vocab, hidden)
/// gradient, no copy or add of one.
at::Tensor embedding(const at::Tensor &table, const at::Tensor &ids,
                     const GradSink &sink = {});

/// x + a W^T, the decoder's residual branches (o_proj, down_proj): one GEMM
/// whose epilogue adds x (addmm), no separate add kernel. With `value`
/// false the result is left uninitialized and only the autograd node is
/// built: full checkpointing recomputes a layer for its backward, which
/// needs this op's inputs (a, W) but never its output, so the recompute
/// skips the GEMM. The backward is exact either way. `sink` as in linear.
at::Tensor residualLinear(const at::Tensor &x, const at::Tensor &a,
                          const at::Tensor &w, bool value = true,
                          const GradSink &sink = {});

/// x + fn(in) W^T [+ bias] for selective checkpointing: fn's output `a`
/// (the attention core's, or the SwiGLU product) feeds the GEMM but is not
/// saved; the node keeps fn's inputs and, in backward, runs fn again with
/// autograd, takes W's gradient (into `sink`) and a's from the recomputed
/// value, and differentiates fn for its inputs' gradients. `value` false as
/// in residualLinear. fn returns one tensor first (others ignored).
at::Tensor recomputedResidualLinear(
    const at::Tensor &x,
    const std::function<std::vector<at::Tensor>(const std::vector<at::Tensor> &)> &fn,
    const std::vector<at::Tensor> &fnInputs, const at::Tensor &w,
    const at::Tensor &bias, bool value = true, const GradSink &sink = {});

/// LoRA's adapted linear over a frozen base W (peft's
/// base(x) + lora_B(lora_A(dropout(x))) * scale, for a group of linears
/// sharing x): [residual +] x W^T [+ bias] + scale (xd A^T) Bd^T, with A the
/// group's A's stacked, Bd its B's as one block-diagonal matrix and xd x's
/// dropped-out copy (undefined: x itself). No pass copies or sums a
/// full-width tensor beyond what the base needs: the delta GEMM writes the
/// output and the base GEMM adds into it (beta 1), or, with a residual, both
/// GEMMs add in place into the residual's copy; in backward x's gradient
/// GEMM takes the adapter's part in its epilogue (when xd is x) instead of
/// autograd summing two gradients. W and the bias get no gradient. `value`
/// false: as residualLinear's (full checkpointing's recompute skips the
/// output, keeping what backward needs).
at::Tensor loraLinear(const at::Tensor &x, const at::Tensor &xd,
                      const at::Tensor &w, const at::Tensor &bias,
                      const at::Tensor &a, const at::Tensor &bd, double scale,
                      const at::Tensor &residual = {}, bool value = true);

/// Mean cross-entropy of softmax(h W^T) against targets, h: (T, C), W: (V, C),
/// targets: (T) int64, computed `chunkTokens` rows at a time (fp32 softmax).
/// With grad mode on and an input that requires grad, the gradients of h
/// and W are computed during the forward chunk by chunk (the logits
/// gradient of one chunk lives only while its chunk is processed); the
/// backward only scales them. Holds for backward: dh (T, C) and dW (V, C) in
/// the input dtypes. chunkTokens <= 0: sized so a chunk's logits are about
/// 2^28 elements. With `wSink`, dW is written (or added) into the sink's
/// buffer during the forward instead, each chunk's GEMM accumulating in fp32
/// into an fp32 buffer, and W's gradient comes back undefined; the backward
/// then reads the upstream gradient on the host (one sync) and scales the
/// buffer when it is not 1, which it can only do for a buffer it wrote
/// alone (an accumulating sink needs an upstream gradient of 1: the
/// engine's loss.backward()). `upstreamIsOne`: the caller's backward starts
/// at this loss with a gradient of exactly 1 (the engine's), so the sink is
/// left as written and nothing is read on the host (the sync stalled the
/// GPU ~0.4 ms at the start of each backward).
/// `masked`: rows whose target is negative (HF's -100) have no loss and no
/// gradient, and the sum is divided by `divisor` instead of T (the engine
/// passes the step's trained tokens / (world * accumulation), so summed
/// gradients average over the step's trained tokens). Unmasked, `divisor`
/// is ignored and the arithmetic is the plain mean's.
at::Tensor linearCrossEntropy(const at::Tensor &h, const at::Tensor &w,
                              const at::Tensor &targets,
                              int64_t chunkTokens = 0,
                              const GradSink &wSink = {}, bool masked = false,
                              double divisor = 0, bool upstreamIsOne = false);

/// bf16-mixed AdamW step on CUDA for fp32 master/grads/states; writes the
/// updated weights in bf16 to `out` too when given (the publish copy). False
/// when not available. The three fused AdamW steps add the sum of the
/// squares of `grad` (as given, before gradScale) to `gradSumSq` when given
/// (a 0-dim fp64 tensor on the device): the gradient norm without a pass of
/// its own. Weight decay applies to the elements from `decayFrom` on
/// (the earlier ones, a unit's norms and biases, are not decayed: HF
/// Trainer's parameter groups, Model.h UnitLayout::decayBegin).
bool fusedAdamwFp32(at::Tensor &param, const at::Tensor &grad,
                    at::Tensor &expAvg, at::Tensor &expAvgSq, at::Tensor *out,
                    double lr, double beta1, double beta2, double eps,
                    double weightDecay, int64_t decayFrom, double gradScale,
                    double bc1,
                    double bc2, at::Tensor *gradSumSq = nullptr);

/// bf16-mixed's fp32 master kept in the compute copy
/// (plan::masterInComputeCopy): `hi` (bf16) receives each weight rounded to
/// the nearest bf16 with ties away from zero (on the fp32 bits; it differs
/// from a round-to-nearest-even cast only at exact ties), `low` (int16) the
/// signed remainder of the bits. joinMaster(hi, low) is the exact fp32
/// value again. Any device; same lengths; hi and low written in place.
void splitMaster(const at::Tensor &master, at::Tensor &hi, at::Tensor &low);
at::Tensor joinMaster(const at::Tensor &hi, const at::Tensor &low);

/// bf16-mixed AdamW step on CUDA on a master kept as (hi, low) (splitMaster's
/// layout), fp32 gradients and states; false when not available (the caller
/// joins, steps in tensor ops and splits again).
bool fusedAdamwSplit(at::Tensor &hi, at::Tensor &low, const at::Tensor &grad,
                     at::Tensor &expAvg, at::Tensor &expAvgSq, double lr,
                     double beta1, double beta2, double eps,
                     double weightDecay, int64_t decayFrom, double gradScale,
                     double bc1, double bc2, at::Tensor *gradSumSq = nullptr);

/// Pure-bf16 AdamW step on CUDA: bf16 params, grads and states, the update
/// computed in fp32 and each stored value rounded once; false when not
/// available (the caller falls back to tensor ops).
bool fusedAdamwBf16(at::Tensor &param, const at::Tensor &grad,
                    at::Tensor &expAvg, at::Tensor &expAvgSq, double lr,
                    double beta1, double beta2, double eps, double weightDecay,
                    int64_t decayFrom, double gradScale, double bc1, double bc2,
                    at::Tensor *gradSumSq = nullptr);

/// sumSq (one fp64 on the device) += the sum of g's squares, in one pass
/// at the memory's bandwidth (CUDA, bf16 or fp32, contiguous); false
/// elsewhere (the caller uses at::norm).
bool addSumOfSquares(const at::Tensor &g, at::Tensor &sumSq);

/// The plain LibTorch op chains the fused ops replace (what Model.cpp runs
/// on CPU), with the same signatures.
at::Tensor opRmsNorm(const at::Tensor &x, const at::Tensor &w, double eps);
at::Tensor opSwiglu(const at::Tensor &gateUp);
at::Tensor opRope(const at::Tensor &x, const at::Tensor &cos,
                  const at::Tensor &sin);
std::vector<at::Tensor> opQkvRope(const at::Tensor &qkv, const at::Tensor &cos,
                                  const at::Tensor &sin, int64_t nh,
                                  int64_t nkv);

} // namespace swift::rt
