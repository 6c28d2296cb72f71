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
  extern __shared__ float smem[];
  const Dims& d = p.d;
  const int64_t H = d.hidden;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kTileRows, u0 = static_cast<int64_t>(blockIdx.y) * kTileUnits;
  float acc[kPairs][3];
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int64_t u = u0 + PairUnit(i);
#pragma unroll
    for (int g = 0; g < 3; ++g) acc[i][g] = u < H ? p.b[g * H + u] : 0.f;
  }
  TileMatmul<3>(p.h, H, p.W, 3 * H, H, d.batch, H, r0, u0, smem, smem + kTileRows * kChunk, acc);
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int64_t r = r0 + PairRow(i), u = u0 + PairUnit(i);
    if (r >= d.batch || u >= H) continue;
    const int64_t row = r * d.length + t;
    const T* gx = p.gx + row * 3 * H;
    const float rg = Sigmoid(ToF(gx[u]) + acc[i][0]);
    const float zg = Sigmoid(ToF(gx[H + u]) + acc[i][1]);
    const float ng = tanhf(ToF(gx[2 * H + u]) + rg * acc[i][2]);
    const float hv = (1.f - zg) * ng + zg * p.h[r * H + u];
    p.next[r * H + u] = hv;
    p.y[row * H + u] = FromF<T>(hv);
    if (p.gates != nullptr) {
      float* g = p.gates + row * 4 * H;
      g[u] = rg;
      g[H + u] = zg;
      g[2 * H + u] = ng;
      g[3 * H + u] = acc[i][2];
    }
  }
}

// Shared bytes of the step kernel: the staged h and W slices.
inline size_t FwdSharedBytes() { return sizeof(float) * (kTileRows * kChunk + kChunk * 3 * kTileUnits); }

}  // namespace gru_cuda

#endif  // XLA_FFI_CSRC_GRU_CUDA_FWD_CUH_
