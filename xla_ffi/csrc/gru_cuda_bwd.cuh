// Backward step kernels of the CUDA GRU recurrence (formulas as in gru_cpu_bwd.cc; tiling in
// gru_cuda_common.cuh). Per step, last to first: GruBwdGatesKernel turns dL/dh_t = dy_t +
// carry into dgx_t, dgh_t and dh z; GruBwdCarryKernel adds dgh_t W^T to give the next carry.
#ifndef XLA_FFI_CSRC_GRU_CUDA_BWD_CUH_
#define XLA_FFI_CSRC_GRU_CUDA_BWD_CUH_

#include "gru_cuda_common.cuh"

namespace gru_cuda {

template <typename T>
struct BwdArgs {
  const float* Wt;     // [3H, H]
  const float* h0;     // [B, H]
  const T* y;          // [B, L, H]
  const float* gates;  // [B, L, 4H]
  const T* dy;         // [B, L, H]
  T* dgx;              // [B, L, 3H]
  float* dgh;          // [B, L, 3H]
  const float* carry;  // [B, H]: dL/dh_t from later steps
  float* dhz;          // [B, H]: dL/dh_t * z_t
  float* next;         // [B, H]: dL/dh_{t-1}
  Dims d;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) GruBwdGatesKernel(BwdArgs<T> p, int64_t t) {
  const Dims& d = p.d;
  const int64_t H = d.hidden;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < d.batch * H;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / H, u = i % H, row = r * d.length + t;
    const float* g = p.gates + row * 4 * H;
    const float rg = g[u], zg = g[H + u], ng = g[2 * H + u], ghn = g[3 * H + u];
    const float hprev = t > 0 ? ToF(p.y[(row - 1) * H + u]) : p.h0[r * H + u];
    const float dh = ToF(p.dy[row * H + u]) + p.carry[i];
    const float dn = dh * (1.f - zg) * (1.f - ng * ng);
    const float dr = dn * ghn * rg * (1.f - rg);
    const float dz = dh * (hprev - ng) * zg * (1.f - zg);
    T* gx = p.dgx + row * 3 * H;
    float* gh = p.dgh + row * 3 * H;
    gx[u] = FromF<T>(dr);
    gx[H + u] = FromF<T>(dz);
    gx[2 * H + u] = FromF<T>(dn);
    gh[u] = dr;
    gh[H + u] = dz;
    gh[2 * H + u] = dn * rg;
    p.dhz[i] = dh * zg;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) GruBwdCarryKernel(BwdArgs<T> p, int64_t t) {
  float* smem = cuda_device::DynamicShared();
  const int64_t H = p.d.hidden;
  // dgh_t rows are [batch, 3H] with stride length * 3H (the step's slice of the output).
  TileStep<1>(p.dgh + t * 3 * H, p.d.length * 3 * H, p.Wt, H, 3 * H, p.d.batch, H, smem,
              [&](int64_t r, int64_t u, int) { return p.dhz[r * H + u]; },
              [&](int64_t r, int64_t u, const float* acc) { p.next[r * H + u] = acc[0]; });
}

// Shared bytes of the carry kernel: the staged dgh and W^T slices.
inline size_t BwdSharedBytes() { return sizeof(float) * (kTileRows * kChunk + kChunk * kTileUnits); }

}  // namespace gru_cuda

#endif  // XLA_FFI_CSRC_GRU_CUDA_BWD_CUH_
