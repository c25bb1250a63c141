// How much faster than cuBLAS's default choice can a bf16 GEMM of the
// decoder's shapes run? For each linear of the 3B and 8B side-by-side shapes
// and each direction (forward Y = X W^T, dX = dY W, dW = dY^T X), times
// cublasGemmEx (what at::mm runs) and every algorithm cuBLASLt's heuristic
// offers (up to 32), and prints the best against the default.
//
// Build and run (device): nvcc -O2 -arch=sm_90 -o /tmp/lt_sweep
//   benchmarks/runtime/lt_sweep.cu -lcublasLt -lcublas && /tmp/lt_sweep
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    auto s_ = (x);                                                             \
    if (s_ != 0) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x,  \
                   int(s_));                                                   \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

struct Gemm { // column-major C(m x n) = op(A) op(B), as cuBLAS sees it
  const char *name;
  cublasOperation_t ta, tb;
  int m, n, k;
};

template <typename F> float timeMs(F &&f, int iters = 10) {
  for (int i = 0; i < 2; ++i)
    f();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i)
    f();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

void fillRandom(__nv_bfloat16 *p, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  unsigned s = 12345;
  for (auto &v : h) {
    s = s * 1664525u + 1013904223u;
    v = __float2bfloat16(float(int(s >> 9) - (1 << 22)) / float(1 << 22));
  }
  CK(cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice));
}

} // namespace

int main() {
  struct Shape { const char *model; int T, C, QKV, I; };
  const Shape shapes[] = {{"3b B2 S4096", 8192, 3072, 5120, 8192},
                          {"8b B1 S4096", 4096, 4096, 6144, 14336}};
  const size_t maxElems = size_t(8192) * 28672;
  __nv_bfloat16 *A, *B, *C;
  CK(cudaMalloc(&A, maxElems * 2));
  CK(cudaMalloc(&B, maxElems * 2));
  CK(cudaMalloc(&C, maxElems * 2));
  fillRandom(A, maxElems);
  fillRandom(B, maxElems);
  const size_t wsBytes = size_t(64) << 20;
  void *ws;
  CK(cudaMalloc(&ws, wsBytes));
  cublasHandle_t h;
  CK(cublasCreate(&h));
  CK(cublasSetWorkspace(h, ws, wsBytes));
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  double sumDefault = 0, sumBest = 0;
  for (const Shape &s : shapes) {
    const int lins[4][2] = {{s.QKV, s.C}, {s.C, s.C}, {2 * s.I, s.C}, {s.C, s.I}};
    const char *linNames[4] = {"qkv", "o", "gate_up", "down"};
    for (int l = 0; l < 4; ++l) {
      int N = lins[l][0], K = lins[l][1], T = s.T;
      // Row-major Y[T,N] = X[T,K] W[N,K]^T etc., written column-major.
      const Gemm gemms[3] = {{"fwd", CUBLAS_OP_T, CUBLAS_OP_N, N, T, K},
                             {"dX", CUBLAS_OP_N, CUBLAS_OP_N, K, T, N},
                             {"dW", CUBLAS_OP_N, CUBLAS_OP_T, K, N, T}};
      for (const Gemm &g : gemms) {
        int lda = g.ta == CUBLAS_OP_N ? g.m : g.k;
        int ldb = g.tb == CUBLAS_OP_N ? g.k : g.n;
        int ldc = g.m;
        float one = 1, zero = 0;
        double flops = 2.0 * g.m * g.n * g.k;
        float msDefault = timeMs([&] {
          CK(cublasGemmEx(h, g.ta, g.tb, g.m, g.n, g.k, &one, A, CUDA_R_16BF, lda,
                          B, CUDA_R_16BF, ldb, &zero, C, CUDA_R_16BF, ldc,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
        cublasLtMatmulDesc_t op;
        CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta,
                                          sizeof(g.ta)));
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb,
                                          sizeof(g.tb)));
        cublasLtMatrixLayout_t la, lb, lc;
        CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF,
                                      g.ta == CUBLAS_OP_N ? g.m : g.k,
                                      g.ta == CUBLAS_OP_N ? g.k : g.m, lda));
        CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF,
                                      g.tb == CUBLAS_OP_N ? g.k : g.n,
                                      g.tb == CUBLAS_OP_N ? g.n : g.k, ldb));
        CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, g.m, g.n, ldc));
        cublasLtMatmulPreference_t pref;
        CK(cublasLtMatmulPreferenceCreate(&pref));
        CK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
            sizeof(wsBytes)));
        cublasLtMatmulHeuristicResult_t res[32];
        int found = 0;
        CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 32, res,
                                          &found));
        float msFirst = 0, msBest = 1e30f;
        int best = -1;
        for (int i = 0; i < found; ++i) {
          float ms = timeMs([&] {
            CK(cublasLtMatmul(lt, op, &one, A, la, B, lb, &zero, C, lc, C, lc,
                              &res[i].algo, ws, wsBytes, 0));
          });
          if (i == 0)
            msFirst = ms;
          if (ms < msBest) {
            msBest = ms;
            best = i;
          }
        }
        std::printf("%-12s %-8s %-4s m%-6d n%-6d k%-6d gemmEx %4.0f  lt#0 %4.0f  "
                    "best #%-2d of %2d %4.0f TFLOP/s  (%+.1f%%)\n",
                    s.model, linNames[l], g.name, g.m, g.n, g.k,
                    flops / msDefault / 1e9, flops / msFirst / 1e9, best, found,
                    flops / msBest / 1e9, 100.0 * (msDefault / msBest - 1));
        std::fflush(stdout);
        sumDefault += msDefault;
        sumBest += msBest;
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(op);
      }
    }
  }
  std::printf("sum over shapes: gemmEx %.2f ms, best Lt %.2f ms (%+.1f%%)\n",
              sumDefault, sumBest, 100.0 * (sumDefault / sumBest - 1));
  return 0;
}
