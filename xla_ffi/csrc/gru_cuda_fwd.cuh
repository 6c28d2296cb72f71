// Forward step kernel of the CUDA GRU recurrence (tiling in gru_cuda_common.cuh): h_t from
// h_{t-1} for the block's tile, with y_t and (for the backward) r, z, n and gh_n.
#ifndef XLA_FFI_CSRC_GRU_CUDA_FWD_CUH_
#define XLA_FFI_CSRC_GRU_CUDA_FWD_CUH_

#include "gru_cuda_common.cuh"

namespace gru_cuda {

template <typename T>
struct FwdArgs {
  const T* gx;      // [B, L, 3H]
  const float* W;   // [H, 3H]
  const float* b;   // [3H]
  const float* h;   // [B, H]: h_{t-1}
  float* next;      // [B, H]: h_t
  T* y;             // [B, L, H]
  float* gates;     // [B, L, 4H] or null
  Dims d;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) GruFwdStepKernel(FwdArgs<T> p, int64_t t) {
  float* smem = cuda_device::DynamicShared();
  const int64_t H = p.d.hidden;
  TileStep<3>(p.h, H, p.W, 3 * H, H, p.d.batch, H, smem, [&](int64_t, int64_t u, int g) { return p.b[g * H + u]; },
              [&](int64_t r, int64_t u, const float* gh) {
                const int64_t row = r * p.d.length + t;
                const T* gx = p.gx + row * 3 * H;
                const float rg = Sigmoid(ToF(gx[u]) + gh[0]);
                const float zg = Sigmoid(ToF(gx[H + u]) + gh[1]);
                const float ng = tanhf(ToF(gx[2 * H + u]) + rg * gh[2]);
                const float hv = (1.f - zg) * ng + zg * p.h[r * H + u];
                p.next[r * H + u] = hv;
                p.y[row * H + u] = FromF<T>(hv);
                if (p.gates != nullptr) {
                  float* g = p.gates + row * 4 * H;
                  g[u] = rg;
                  g[H + u] = zg;
                  g[2 * H + u] = ng;
                  g[3 * H + u] = gh[2];
                }
              });
}

// Shared bytes of the step kernel: the staged h and W slices.
inline size_t FwdSharedBytes() { return sizeof(float) * (kTileRows * kChunk + kChunk * 3 * kTileUnits); }

}  // namespace gru_cuda

#endif  // XLA_FFI_CSRC_GRU_CUDA_FWD_CUH_
