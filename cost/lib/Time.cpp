//===- Time.cpp - step time: compute, communication, offload --------------===//
//
// Compute is priced per op class: GEMMs and attention at an achieved
// fraction of the GPU's bf16 peak (the decoder linears' GEMMs of fp8-mixed
// and fp8-bf16 at a fraction of its FP8 peak, plus the bytes of their
// casts), memory-bound kernels as the bytes they move over an achieved
// fraction of HBM bandwidth, and host dispatch of every
// autograd node overlapped with the GPU's work. Collectives are ring algorithms: latency per step plus bytes x
// (n-1)/n (x2 for all-reduce) over the slowest link they cross, overlapped
// with the compute they can hide under. The efficiencies were measured on an
// H200 with HF eager (docs/cost-model-hf.md) and are kept as fractions so
// they carry over to other GPUs.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"
#include "swift/Cost/Parallel.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace swift::cost::detail {
namespace {

// Achieved fractions of the datasheet peaks (H200: 650 of 989 TFLOP/s for
// GEMMs in HF layers, 400 for causal cuDNN SDPA, 3.0 of 4.8 TB/s for
// elementwise kernels).
constexpr double kMatmulEfficiency = 0.657;
constexpr double kAttentionEfficiency = 0.404;
constexpr double kMemoryEfficiency = 0.625;
// swift-run's own kernels run closer to the hardware than HF eager's op
// chains: its GEMMs (stacked q/k/v and gate/up, residual epilogues, weight
// gradients into the buffers) sustain ~700 TFLOP/s on the H200 (the bf16
// rate benchmarks/runtime/gemm_bench.py measures for these shapes), and
// its fused memory-bound kernels (RMSNorm, SwiGLU, RoPE, AdamW) move
// 3.4-3.8 TB/s (benchmarks/runtime/trace_summary.py on the side-by-side
// runs). Relative factors on the rates above, so measured profiles carry.
constexpr double kFusedMatmulGain = 0.71 / kMatmulEfficiency;
constexpr double kFusedMemoryGain = 0.75 / kMemoryEfficiency;
// The achieved fraction of the FP8 datasheet peak (dense) of swift-run's
// FP8 GEMMs (cuBLASLt through at::_scaled_mm, per-tensor scales, fast
// accumulation) for the decoder linears under fp8-mixed / fp8-bf16. Fitted
// on the H200 (benchmarks/runtime/RESULTS.md, 2026-12-04): Llama-3.2-1B B4
// S2048 and 3B B2 S4096 fp8-mixed, Llama-3.1-8B B1 S4096 fp8-bf16, no
// checkpointing; predictions within +1.6%, +0.6%, -2.4% of the measured
// tokens/s. The same token and width factors as the bf16 rate apply; no
// measured profile rate replaces it.
constexpr double kFp8MatmulEfficiency = 0.63;
// HBM bytes of the casts that feed one FP8 GEMM of a decoder linear with
// weight W (N x K), input x (T x K) and output gradient dy (T x N), moved at
// the fused elementwise rate (runtime/lib/model/Fp8.cpp). Forward, per element of
// W: the amax (read 2 B) and the cast (read 2 B, write 1 B); per element of
// x: the amax and the cast into both layouts (write 1 B each), x^T's codes
// kept for the weight gradient (keepCodes) -- or one layout when x is kept
// anyway (attention's output), which the backward casts again (read 2 B,
// write 1 B). Backward, per element of W: a transposed copy with the
// forward's scale (read 2 B, write 1 B); per element of dy: its amax and
// the cast into both layouts. A recomputed forward casts again.
constexpr double kFp8ForwardBytesPerWeight = 5;
constexpr double kFp8ForwardBytesPerKeptInput = 6, kFp8ForwardBytesPerInput = 5;
constexpr double kFp8BackwardBytesPerWeight = 3, kFp8BackwardBytesPerInput = 3;
constexpr double kFp8BackwardBytesPerOutputGradient = 6;
// swift-run's attention (cuDNN's causal SDPA, GQA in the kernel), forward
// and backward of one sample and layer: P = H S^2 / 2 causal (query, key)
// pairs, each 14 D tensor-core FLOPs (4 D forward, 10 D backward) at a
// fraction of the bf16 peak plus a softmax cost independent of D, and
// E = S H D elements of q, k, v, o and their gradients streamed at the HBM
// rate. A flat FLOP rate cannot hold across shapes: per FLOP the kernel is
// slower at a small head dim (the softmax cost) and at a short sequence
// (the linear traffic), so D = 64 ran 278 TFLOP/s at S = 2048 and 395 at
// S = 16384. Fitted on the H200's traces of five configurations
// (test/data/calibration/h200_attention.jsonl: D 64 and 128, S 1024 to
// 16384; within 2.4% of four, +9.6% of Qwen2.5-1.5B's S = 1024); the flat
// rate was off by -33% to +52% on them. HF's rows keep the flat rate they
// were fitted with (kAttentionEfficiency); a measured attention rate in the
// hardware profile replaces both.
constexpr double kAttentionPairFlops = 14;              // per pair and head dim
constexpr double kAttentionMatmulEfficiency = 0.741;    // of the bf16 peak
constexpr double kAttentionPairPeakFlops = 911;         // softmax, in peak FLOPs
constexpr double kAttentionBytesPerElement = 76.7;      // per element of E, at datasheet HBM
// Host time per autograd node of eager PyTorch (Python module call,
// dispatcher, launches) in forward and in backward; swift-run dispatches
// from C++ with fused ops. Measured on the H200 machine's small-batch rows
// (Llama-3.2-1B B1 S512: 72 ms for ~1500 nodes while the GPU needs ~45).
constexpr double kNodeForwardSecondsPython = 15e-6;
constexpr double kNodeBackwardSecondsPython = 25e-6;
constexpr double kNodeSecondsCpp = 4e-6;
// swift-run launches per adapted linear and direction: two rank-thin GEMMs
// forward (A, then B into the output), four backward, ~3 on average.
constexpr double kAdapterNodes = 3;
// Host dispatch and GPU work overlap but not perfectly: a step takes the
// p-norm of the two (p = 4: the larger dominates, equal ones add ~19%).
constexpr double kOverlapNorm = 4;
// GEMMs of few tokens fill the GPU worse (tile quantization, fewer waves):
// efficiency ~ T / (T + kHalfTokens), relative to the 8k-token micro-batches
// the efficiencies above were measured at.
constexpr double kHalfEfficiencyTokens = 512;
constexpr double kReferenceTokens = 8192;
// Likewise for a narrow weight (a GQA k/v projection of two heads): the
// efficiency ~ d / (d + kHalfEfficiencyWidth) over its smaller dimension,
// relative to the 2048-wide layers of the calibration models.
constexpr double kHalfEfficiencyWidth = 128;
constexpr double kReferenceWidth = 2048;
// NCCL reaches ~80% of a link's bandwidth on large messages.
constexpr double kBusEfficiency = 0.8;
// Overlapped collectives slow the compute they hide under by this fraction
// of their own time (SMs and HBM bandwidth taken by NCCL kernels).
constexpr double kOverlapInterference = 0.10;
// Issue, stream synchronization and bookkeeping per collective call.
constexpr double kCollectiveOverheadSeconds = 30e-6;
// Host<->device copies over PCIe reach ~80% of the link.
constexpr double kHostLinkEfficiency = 0.8;
// CPU AdamW under offload, seconds per rank-local parameter. HF/FSDP2
// (torch's CPU AdamW plus the gradient and parameter copies of the step):
// 1.5 ns, measured on the H200 machine's three offload rows (1.26-1.63 ns).
// swift-run and DeepSpeed use a vectorized multi-threaded CPU Adam on pinned
// buffers: swift-run's 16-thread host AdamW plus its copies took ~0.7 s
// of Llama-3.2-1B's 0.92 s offloaded step on the H200 (benchmarks/runtime/
// RESULTS.md): 0.45 ns per parameter predicts that step within 2%.
constexpr double kTorchCpuAdamSecondsPerParam = 1.5e-9;
constexpr double kFastCpuAdamSecondsPerParam = 0.45e-9;

/// The rates the time model runs on: measured where the hardware profile
/// gives them, otherwise datasheet peaks times the efficiencies above.
struct Rates {
  double matmul, attention, elementwise; // FLOP/s, FLOP/s, B/s
  double hostLink;                       // B/s, one direction
  double intraBus, interBus;             // NCCL bus bandwidth, B/s
  double latencyIntra, latencyInter;     // s per collective step
  double cpuAdamTorch, cpuAdamFast;      // s per parameter
};

Rates ratesOf(const Hardware &hw) {
  const MeasuredRates &m = hw.measured;
  auto pick = [](double measured, double fallback) {
    return measured > 0 ? measured : fallback;
  };
  double peak = hw.bf16Tflops * 1e12;
  Rates r;
  r.matmul = pick(m.matmulTflops * 1e12, peak * kMatmulEfficiency);
  r.attention = pick(m.attentionTflops * 1e12, peak * kAttentionEfficiency);
  r.elementwise = pick(m.elementwiseGBps * 1e9, hw.hbmGBps * 1e9 * kMemoryEfficiency);
  r.hostLink = pick(m.hostLinkGBps * 1e9, hw.hostLinkGBps * 1e9 * kHostLinkEfficiency);
  r.intraBus = pick(m.intraNodeBusGBps * 1e9,
                    hw.intraNode.bandwidthGBps * 1e9 * kBusEfficiency);
  r.interBus = pick(m.interNodeBusGBps * 1e9,
                    hw.interNode.bandwidthGBps * 1e9 * kBusEfficiency);
  r.latencyIntra = pick(m.collectiveLatencyUs, hw.intraNode.latencyUs) * 1e-6;
  r.latencyInter = pick(m.collectiveLatencyUs, hw.interNode.latencyUs) * 1e-6;
  r.cpuAdamTorch = pick(m.cpuAdamNsPerParam * 1e-9, kTorchCpuAdamSecondsPerParam);
  r.cpuAdamFast = pick(m.cpuAdamNsPerParam * 1e-9, kFastCpuAdamSecondsPerParam);
  return r;
}

/// HBM bytes per token moved by the memory-bound kernels of `ops`, forward
/// and backward (an elementwise backward reads the gradient and saved
/// inputs and writes a gradient: ~2x its forward).
double elementwiseBytesPerToken(const std::vector<OpProfile> &ops,
                                int64_t seq, Exec exec, double dropout) {
  bool fp32Stream = exec == Exec::Autocast || exec == Exec::Fp32;
  bool fp32 = exec == Exec::Fp32;
  std::set<int> adapterInputs; // inputs whose adapters were counted
  bool fused = exec == Exec::Fused;
  double bytes = 0;
  for (const OpProfile &op : ops) {
    double w = op.inputWidth(seq);
    if (fused) {
      // One kernel per op and direction, bf16 in and out: RMSNorm reads x
      // and writes y, backward reads x, dy and writes dx; RoPE and SwiGLU
      // likewise; the fused loss writes and rereads each chunk's logits.
      switch (op.kind) {
      case OpKind::RMSNorm: bytes += 10 * w; continue;
      case OpKind::Rope: bytes += 8 * w; continue;
      case OpKind::SiluMul: bytes += 14 * op.outputWidth(seq); continue;
      case OpKind::CrossEntropy: bytes += 8 * w; continue;
      default: break;
      }
    }
    switch (op.kind) {
    case OpKind::RMSNorm:
      // upcast, pow, mean, mul, mul, downcast, weight mul (fp32 passes).
      bytes += (fp32Stream ? 84 : 96) * w;
      break;
    case OpKind::Rope:
      bytes += (fp32Stream ? 132 : 60) * w;
      break;
    case OpKind::Add:
      bytes += (fp32Stream ? 36 : 18) * w;
      break;
    case OpKind::SiluMul:
      bytes += 26 * op.outputWidth(seq);
      break;
    case OpKind::Linear:
      // autocast casts an fp32 input per linear (and sums the gradients).
      if (exec == Exec::Autocast && op.inputProducer == OpKind::RMSNorm)
        bytes += 27.6 * op.inFeatures;
      if (exec == Exec::Lora && op.adapter)
        bytes += 3 * (6.0 * op.inFeatures + 24.0 * op.outFeatures);
      // swift-run's adapter GEMMs are rank-thin, so bound by the bytes they
      // move. Per adapted linear: B adds into y (read + write), backward
      // reads dy twice (B's gradient, dU): 4 x out elements. Per input the
      // adapters share (stacked q/k/v and gate/up): A reads x forward and
      // again for its gradient, and dx gets A's contribution added (read +
      // write): 4 x in elements.
      // With dropout each adapted linear writes its own dropped copy of x.
      if (exec != Exec::Lora && op.adapter) {
        double e = fp32 ? 4 : 2;
        bytes += 4 * e * op.outFeatures + (dropout > 0 ? e * op.inFeatures : 0);
        if (op.inputValue < 0 || adapterInputs.insert(op.inputValue).second)
          bytes += 4 * e * op.inFeatures;
      }
      break;
    case OpKind::CrossEntropy:
      // bf16 logits -> fp32 copy -> log_softmax (2 passes) -> nll gradient
      // -> log_softmax backward -> bf16 gradient.
      bytes += 40 * w;
      break;
    case OpKind::Embedding:
    case OpKind::Attention:
      break;
    }
  }
  return bytes;
}

} // namespace

LinkRates linkRates(const Hardware &hw) {
  const Rates r = ratesOf(hw);
  return {r.intraBus,          r.interBus,
          r.latencyIntra,      r.latencyInter,
          kCollectiveOverheadSeconds, kOverlapInterference};
}

/// swift-run's attention for one sample: forward, or backward (the rest of
/// the pass by the op's FLOP split), from the model above.
double fusedAttentionSeconds(const OpProfile &op, int64_t seq, const Hardware &hw,
                             bool forward) {
  const double S = double(seq), H = double(op.heads), D = double(op.headDim);
  const double keys = op.keyLength > 0 ? double(op.keyLength) : S;
  const double peak = hw.bf16Tflops * 1e12;
  const double pairs = H * S * keys / 2;
  const double total =
      pairs * (kAttentionPairFlops * D / (peak * kAttentionMatmulEfficiency) +
               kAttentionPairPeakFlops / peak) +
      S * H * D * kAttentionBytesPerElement / (hw.hbmGBps * 1e9);
  const double f = double(op.forwardFlops), b = double(op.backwardFlops);
  const double forwardShare = f + b > 0 ? f / (f + b) : 0;
  return total * (forward ? forwardShare : 1 - forwardShare);
}

namespace {

/// Autograd nodes per decoder layer of HF eager (traced).
double nodesPerLayer(Exec exec) {
  switch (exec) {
  case Exec::Fused: return 30;
  case Exec::Autocast: return 94;
  case Exec::Lora: return 163;
  default: return 83;
  }
}

struct Compute {
  double forward = 0, backward = 0, recompute = 0;
  // One decoder layer's GPU time per micro-batch: its forward, and its
  // backward with its recompute (what an offloaded input's copy hides
  // under).
  double layerForward = 0, layerBackward = 0;
};

Compute computeSeconds(const ModelProfile &m, const TrainingSetup &setup,
                       const Hardware &hw, const Strategy &s, Exec exec) {
  Rates rates = ratesOf(hw);
  double T = double(s.microBatchSize) * m.sequenceLength;
  auto fill = [](double tokens) { return tokens / (tokens + kHalfEfficiencyTokens); };
  double small = fill(T) / fill(kReferenceTokens);
  const bool fusedExec = exec == Exec::Fused;
  double mm = rates.matmul * small * (fusedExec ? kFusedMatmulGain : 1.0),
         attn = rates.attention,
         hbm = rates.elementwise * (fusedExec ? kFusedMemoryGain : 1.0);
  // fp8-mixed / fp8-bf16: the decoder linears' GEMMs (forward, input and
  // weight gradients, recomputed forwards) at the FP8 rate; the lm_head,
  // attention and the rest keep theirs.
  const bool fp8 = fp8Linears(setup, hw);
  double mm8 = hw.fp8Tflops * 1e12 * kFp8MatmulEfficiency * small;
  bool frozen = setup.method != Method::Full;
  // Attention of one sample: the fused model for swift-run, the flat rate
  // for HF or where the hardware profile measured one.
  const bool fusedAttention = exec == Exec::Fused && hw.measured.attentionTflops <= 0;
  auto attentionSeconds = [&](const OpProfile &op, bool forward) {
    if (fusedAttention)
      return fusedAttentionSeconds(op, m.sequenceLength, hw, forward);
    return double(forward ? op.forwardFlops : op.backwardFlops) / attn;
  };
  // swift-run stacks the linears that read one value (q/k/v, gate/up) into
  // one GEMM: a narrow k/v projection runs at the stacked width.
  auto gemmOutFeatures = [&](const std::vector<OpProfile> &ops, const OpProfile &op) {
    return exec == Exec::Fused ? stackedOutFeatures(ops, op) : op.outFeatures;
  };
  // `decoder`: the ops are (part of) a decoder layer.
  auto opSeconds = [&](const std::vector<OpProfile> &ops, bool forward,
                       bool decoder) {
    double linearRate = decoder && fp8 ? mm8 : mm;
    double t = 0;
    for (const OpProfile &op : ops) {
      double flops = forward ? op.forwardFlops
                             : (frozen ? op.backwardFlopsFrozen : op.backwardFlops);
      if (op.kind == OpKind::Linear) {
        double width = std::min(op.inFeatures, gemmOutFeatures(ops, op));
        double narrow = std::min(1.0, (width / (width + kHalfEfficiencyWidth)) /
                                          (kReferenceWidth /
                                           (kReferenceWidth + kHalfEfficiencyWidth)));
        t += flops / (linearRate * narrow);
      }
      else if (op.kind == OpKind::Attention)
        t += attentionSeconds(op, forward);
    }
    return t * s.microBatchSize;
  };
  int64_t L = m.numLayers;
  double layerEw = T * elementwiseBytesPerToken(m.layer, m.sequenceLength, exec,
                                                setup.loraDropout) / hbm;
  double headEw = T * (elementwiseBytesPerToken(m.head, m.sequenceLength, exec,
                                                setup.loraDropout) +
                       elementwiseBytesPerToken(m.embed, m.sequenceLength, exec,
                                                setup.loraDropout)) / hbm;
  // The casts feeding one layer's FP8 GEMMs, forward and backward; the
  // last GEMM's forward casts, which a recompute skips with the GEMM.
  double castsForward = 0, castsBackward = 0, castsLast = 0;
  if (fp8)
    for (const Gemm &g : decoderGemms(m)) {
      double w = g.outFeatures * g.inFeatures, x = T * g.inFeatures,
             dy = T * g.outFeatures;
      castsForward += kFp8ForwardBytesPerWeight * w +
                      (g.inputKept ? kFp8ForwardBytesPerInput
                                   : kFp8ForwardBytesPerKeptInput) * x;
      castsBackward += kFp8BackwardBytesPerWeight * w +
                       (g.inputKept ? kFp8BackwardBytesPerInput : 0) * x +
                       kFp8BackwardBytesPerOutputGradient * dy;
      // What a recompute without the output skips: the weight's cast and
      // x's row-major codes (the amaxes and x^T's codes are still made).
      castsLast = (kFp8ForwardBytesPerWeight - 2) * w + 1 * x;
    }
  Compute c;
  double layerFwd = opSeconds(m.layer, true, true),
         layerBwd = opSeconds(m.layer, false, true);
  c.forward = L * layerFwd + opSeconds(m.head, true, false) +
              opSeconds(m.embed, true, false) + (L * layerEw + headEw) / 3 +
              L * castsForward / hbm;
  c.backward = L * layerBwd + opSeconds(m.head, false, false) +
               opSeconds(m.embed, false, false) + 2 * (L * layerEw + headEw) / 3 +
               L * castsBackward / hbm;
  // Recompute: the whole layer's forward, or under selective checkpointing
  // only the attention core and the SwiGLU product.
  double recomputePerLayer = layerFwd + layerEw / 3 + castsForward / hbm;
  if (exec == Exec::Fused) {
    // swift-run recomputes a layer only to differentiate it: the last GEMM
    // (down_proj), whose output backward never reads, is skipped.
    auto last = std::find_if(m.layer.rbegin(), m.layer.rend(), [](const OpProfile &op) {
      return op.kind == OpKind::Linear;
    });
    if (last != m.layer.rend())
      recomputePerLayer -= opSeconds({*last}, true, true) + castsLast / hbm;
  }
  if (s.checkpointing == Checkpointing::Selective) {
    recomputePerLayer = 0;
    for (const OpProfile &op : m.layer) {
      if (op.kind == OpKind::Attention)
        recomputePerLayer += double(s.microBatchSize) * attentionSeconds(op, true);
      if (op.kind == OpKind::SiluMul || op.kind == OpKind::Rope)
        recomputePerLayer += T *
                             elementwiseBytesPerToken({op}, m.sequenceLength, exec,
                                                      setup.loraDropout) /
                             3 / hbm;
    }
  }
  // QLoRA dequantizes each layer's NF4 linears to bf16 for its forward, its
  // backward and (whole-layer checkpointing) its recompute.
  if (setup.method == Method::QLora) {
    double dequantize = frozenBase(m, setup.method, 2).layerQuantizedElements *
                        kDequantizeBytesPerElement / hbm;
    c.forward += L * dequantize;
    c.backward += L * dequantize;
    if (s.checkpointing == Checkpointing::Full)
      recomputePerLayer += dequantize;
  }
  c.recompute = s.checkpointedLayers(L) * recomputePerLayer;
  // MLP tiles: each layer's backward recomputes the gate/up GEMM and the
  // SwiGLU product tile by tile (only the MLP's input was kept). A fully
  // checkpointed layer's recompute then skips its MLP, which its backward
  // runs anyway: no extra work there.
  const int64_t tiledExtra =
      s.mlpTileTokens > 0
          ? L - (s.checkpointing == Checkpointing::Full ? s.checkpointedLayers(L) : 0)
          : 0;
  if (tiledExtra > 0)
    for (const OpProfile &op : m.layer) {
      const bool gateUp = op.kind == OpKind::Linear &&
                          (op.name.find("gate_proj") != std::string::npos ||
                           op.name.find("up_proj") != std::string::npos);
      if (gateUp)
        c.recompute += tiledExtra * opSeconds({op}, true, true);
      if (op.kind == OpKind::SiluMul)
        c.recompute += tiledExtra * T *
                       elementwiseBytesPerToken({op}, m.sequenceLength, exec,
                                                setup.loraDropout) /
                       3 / hbm;
    }
  c.layerForward = layerFwd + layerEw / 3;
  c.layerBackward = layerBwd + 2 * layerEw / 3 +
                    (s.checkpointedLayers(L) ? recomputePerLayer : 0);
  // Host dispatch of every node, forward, backward and recompute, overlapped
  // with the GPU's work. swift-run's adapters add their GEMMs' launches.
  double layerNodes = nodesPerLayer(exec);
  if (exec != Exec::Lora)
    for (const OpProfile &op : m.layer)
      if (op.adapter)
        layerNodes += kAdapterNodes;
  double nodes = L * layerNodes;
  double ckpt = s.checkpointedLayers(L) * layerNodes;
  double fwdHost, bwdHost, recomputeHost;
  if (setup.backend == Backend::SwiftRun) {
    fwdHost = bwdHost = nodes * kNodeSecondsCpp;
    recomputeHost = ckpt * kNodeSecondsCpp;
  } else {
    fwdHost = nodes * kNodeForwardSecondsPython;
    bwdHost = nodes * kNodeBackwardSecondsPython;
    recomputeHost = ckpt * kNodeForwardSecondsPython;
  }
  auto overlap = [](double gpu, double host) {
    return std::pow(std::pow(gpu, kOverlapNorm) + std::pow(host, kOverlapNorm),
                    1 / kOverlapNorm);
  };
  c.forward = overlap(c.forward, fwdHost);
  c.backward = overlap(c.backward, bwdHost);
  c.recompute = c.recompute > 0 ? overlap(c.recompute, recomputeHost) : 0;
  return c;
}

/// One ring collective over group `g`: bytes per rank, all-reduce moving
/// twice, over the slowest link it crosses (the inter-node fabric when the
/// group spans nodes and that is slower, NVLink otherwise).
double collectiveSeconds(double bytes, bool allReduce, const Group &g,
                         const Hardware &hw) {
  double n = g.n;
  if (n <= 1 || bytes <= 0)
    return 0;
  Rates r = ratesOf(hw);
  bool crossNodes = g.crossesNodes && r.interBus < r.intraBus;
  double bw = crossNodes ? r.interBus : r.intraBus;
  double latency = crossNodes ? r.latencyInter : r.latencyIntra;
  double factor = (allReduce ? 2 : 1) * (n - 1) / n;
  double steps = (allReduce ? 2 : 1) * (n - 1);
  return steps * latency + bytes * factor / bw;
}

} // namespace

TimeEstimate timeFor(const ModelProfile &m, const TrainingSetup &setup,
                     const Hardware &hw, const Strategy &s) {
  if (meshBackend(setup.backend))
    return meshTime(m, setup, hw, s);
  Exec exec = execution(setup, s);
  Compute c = computeSeconds(m, setup, hw, s, exec);
  double micro = s.gradientAccumulation;
  double P = m.parameters, W = hw.worldSize();
  // The ranks the states are sharded over, and the group ZeRO's collectives
  // run in: every GPU unless the layout has shard groups (HSDP). DeepSpeed's
  // form of them, ZeRO++ hpZ (ZeRO-3 only), keeps its partitions and the
  // gradients' reduce-scatter over every rank; only the weights get a
  // secondary partition in each group, which the gathers read after the
  // step's first forward (hpzGroup).
  const bool deepSpeed = setup.backend == Backend::DeepSpeed;
  const Group worldGroup = Layout().group(MeshDim::DpShard, hw.worldSize(),
                                          hw.gpusPerNode);
  const Group hpzGroup = meshGroup(s, hw, MeshDim::DpShard);
  const double S = deepSpeed ? W : shardRanks(s, hw);
  const Group shardGroup = deepSpeed ? worldGroup : hpzGroup;
  const Group replicaGroup = meshGroup(s, hw, MeshDim::DpReplicate);
  bool frozen = setup.method != Method::Full;
  bool swiftRun = setup.backend == Backend::SwiftRun;
  double trainable = frozen ? m.adapterParameters : P;
  // peft's adapters are fp32 but their gradients are reduced in bf16;
  // swift-run's follow the precision like full parameters.
  const bool pureBf16 = plan::storagePrecision(setup.precision) == Precision::Bf16;
  double gradBytes = (pureBf16 || (frozen && !swiftRun) ? 2 : 4);
  if (setup.backend == Backend::DeepSpeed)
    gradBytes = 2;
  // What ZeRO-3 gathers per pass: bf16 parameters, or the frozen base as
  // stored (QLoRA's linears NF4) plus the adapters.
  FrozenBase base = frozenBase(m, setup.method, 2);
  double gatherBytes = frozen ? base.total + 2.0 * trainable : 2.0 * P;
  double firstUnitBytes =
      frozen ? std::max(base.layer + 2.0 * trainable / m.numLayers, base.embedding)
             : 2.0 * std::max<double>(m.layerParameters, m.embeddingParameters);

  TimeEstimate t;
  t.computeSeconds = micro * (c.forward + c.backward + c.recompute);
  t.recomputeSeconds = micro * c.recompute;

  // Collectives per step and the compute they hide under. A hidden
  // collective is not free: its kernels take SMs and HBM bandwidth from the
  // compute it overlaps (kOverlapInterference of its time), and each one
  // costs a fixed issue/synchronization overhead on the critical path.
  double exposed = 0, total = 0, count = 0;
  double paramBytes = 2; // gathers move bf16 parameters
  double grads = gradBytes * trainable;
  auto buckets = [&](double bytes) {
    return std::max(1.0, std::ceil(bytes / double(s.bucketBytes)));
  };
  if (W > 1) {
    if (s.zero == 0) {
      // Bucketed all-reduce during the last micro-batch's backward; the last
      // bucket cannot hide.
      double ar = collectiveSeconds(grads, true, shardGroup, hw);
      total = ar;
      count = buckets(grads);
      exposed = std::max(0.0, ar - c.backward) +
                collectiveSeconds(std::min<double>(s.bucketBytes, grads), true, shardGroup, hw);
    } else if (s.zero <= 2) {
      // Reduce-scatter of gradients (every micro-batch at ZeRO-2, the last
      // at ZeRO-1) under backward, then an all-gather of updated parameters
      // that nothing hides.
      double rsTimes = s.zero == 2 ? micro : 1;
      double rs = collectiveSeconds(grads, false, shardGroup, hw);
      double ag = collectiveSeconds(paramBytes * trainable, false, shardGroup, hw);
      total = rsTimes * rs + ag;
      count = rsTimes * buckets(grads) + buckets(paramBytes * trainable);
      exposed = rsTimes * std::max(0.0, rs - c.backward) +
                collectiveSeconds(std::min<double>(s.bucketBytes, grads), false, shardGroup, hw) + ag;
    } else {
      // ZeRO-3, every micro-batch: gather each unit for forward and again
      // for backward (prefetched under the previous unit's compute), and
      // reduce-scatter its gradients under backward. Gathers copy the shard
      // in and the unit out through HBM.
      // DeepSpeed's hpZ: the step's first forward gathers from the primary
      // partition over every rank (the step invalidates the secondary
      // one, stage3.py _post_step); releasing a gathered unit fills its
      // secondary partition, so every later gather (backward, and the
      // forwards of further micro-batches) stays in the hpZ group
      // (partition_parameters.py _partition_param_sec, all_gather_coalesced).
      double units = m.numLayers + 2;
      const Group &firstGather = deepSpeed ? worldGroup : shardGroup;
      double agFirst = collectiveSeconds(gatherBytes, false, firstGather, hw);
      double agFwd = collectiveSeconds(gatherBytes, false, hpzGroup, hw);
      double agBwd = agFwd;
      double rs = collectiveSeconds(grads, false, shardGroup, hw);
      double firstUnit = collectiveSeconds(firstUnitBytes, false, firstGather, hw);
      double laterUnit = collectiveSeconds(firstUnitBytes, false, hpzGroup, hw);
      total = micro * (agFwd + agBwd + rs);
      count = micro * 3 * units;
      // The copies in and out of the gather buffers run on the compute
      // stream: communication cost nothing hides.
      exposed = micro * (std::max(0.0, agFwd - c.forward) +
                         std::max(0.0, agBwd + rs - c.backward - c.recompute) + laterUnit +
                         2 * 2 * gatherBytes / ratesOf(hw).elementwise);
      // hpZ's first forward gathers over every rank instead (nothing
      // changes elsewhere: the same group).
      total += agFirst - agFwd;
      exposed += std::max(0.0, agFirst - c.forward) + firstUnit -
                 (std::max(0.0, agFwd - c.forward) + laterUnit);
    }
    // HSDP on swift-run: on the step's last micro-batch each unit's reduced
    // shard (G / S) is all-reduced across the replica groups, one
    // all-reduce per unit. UnitDriver::reduceScatter chains it to the
    // unit's reduce-scatter and issues it only when that is waited for, and
    // waits for it there (on the compute stream's critical path; on CUDA
    // the replica communicator's stream does not overlap it with later
    // reductions yet): exposed, every unit.
    if (!deepSpeed && replicaGroup.n > 1 && s.zero >= 1) {
      double units = frozen ? m.numLayers : m.numLayers + 2;
      t.replicaAllReduceSeconds =
          units * collectiveSeconds(grads / S / units, true, replicaGroup, hw);
      total += t.replicaAllReduceSeconds;
      exposed += t.replicaAllReduceSeconds;
      count += units;
    }
    exposed += kOverlapInterference * std::max(0.0, total - exposed) +
               count * kCollectiveOverheadSeconds;
  }
  // The exposed part counts costs the bandwidth total leaves out (each
  // collective's launch overhead, ZeRO-3's gather-buffer copies, the last
  // bucket's latency): the total is at least what is exposed, so the report
  // never shows a part larger than its whole.
  t.communicationSeconds = std::max(total, exposed);
  t.exposedCommunicationSeconds = exposed;

  // The optimizer: fused AdamW streams parameters, gradients and states
  // through HBM; offloaded it runs on the host cores after the gradients
  // cross PCIe, and the parameters cross back.
  Rates rates = ratesOf(hw);
  double hbm = rates.elementwise *
               (exec == Exec::Fused ? kFusedMemoryGain : 1.0);
  double shard = s.zero == 0 ? trainable : trainable / S;
  if (s.offload == Offload::None) {
    // peft's adapters are fp32 whatever the precision; swift-run's follow it.
    double bytesPerParam = pureBf16 && (!frozen || swiftRun) ? 14 : 28;
    // autocast's weight casts (fp32 -> bf16 each forward, gradient upcasts).
    double casts = exec == Exec::Autocast ? 12.0 * P : 0;
    t.optimizerSeconds = (bytesPerParam * shard + casts) / hbm;
  } else {
    double link = rates.hostLink;
    if (setup.backend == Backend::HF) {
      // Measured as a whole: CPU AdamW with the step's copies.
      t.optimizerSeconds = shard * rates.cpuAdamTorch;
    } else {
      t.optimizerSeconds = shard * rates.cpuAdamFast;
      // Gradients down, updated parameters up.
      t.offloadSeconds = (gradBytes + 2) * shard / link;
    }
    // Offloaded parameters cross PCIe again for every further micro-batch's
    // gathers (forward and backward). A frozen base is never updated: its
    // shard crosses for every forward and backward, the first one included
    // (ZeRO-3 only: offloading parameters needs it).
    if (s.offload == Offload::OptimizerAndParams) {
      if (micro > 1)
        t.offloadSeconds += (micro - 1) * 2 * 2.0 * trainable / S / link;
      t.offloadSeconds += (2 * micro - 1) * base.total / S / link;
    }
  }
  // Offloaded layer inputs: each crosses the host link out during its
  // layer's forward and back during the next layer's backward (the copy
  // stream runs beside compute); what a copy takes beyond that layer's
  // compute is exposed, every micro-batch.
  if (int64_t k = s.offloadedLayers(m.numLayers)) {
    double bytes = double(s.microBatchSize) * m.sequenceLength * m.hiddenSize *
                   activationBytes(exec);
    double copy = bytes / rates.hostLink;
    t.activationCopySeconds = micro * k * 2 * copy;
    t.activationOffloadSeconds =
        micro * k *
        (std::max(0.0, copy - c.layerForward) + std::max(0.0, copy - c.layerBackward));
    t.offloadSeconds += t.activationOffloadSeconds;
  }
  t.stepSeconds = t.computeSeconds + t.exposedCommunicationSeconds +
                  t.offloadSeconds + t.optimizerSeconds;
  double tokens = double(setup.globalBatchSize) * m.sequenceLength;
  t.tokensPerSecond = tokens / t.stepSeconds;
  t.mfu = modelFlopsPerStep(m, setup.globalBatchSize, setup.method) /
          (t.stepSeconds * W * hw.bf16Tflops * 1e12);
  return t;
}

} // namespace swift::cost::detail
