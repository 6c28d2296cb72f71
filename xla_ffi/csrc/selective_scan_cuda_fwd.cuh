// Forward kernel of the CUDA selective scan: y, the last state and the chunk-boundary states
// (layout in selective_scan_cuda_common.cuh).

#ifndef XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_FWD_CUH_
#define XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_FWD_CUH_

#include "selective_scan_cuda_common.cuh"

namespace selective_scan_cuda {

template <typename T>
struct FwdArgs : ScanOperands<T> {
  T* y;
  float* last_state;    // (B, D, N)
  float* chunk_states;  // (B, nchunks, D, N)
};

template <typename T, int K>
__global__ void __launch_bounds__(kThreads) SelectiveScanFwdKernel(FwdArgs<T> p) {
  float* smem = cuda_device::DynamicShared();
  const Dims& dims = p.dims;
  const auto [DC, TT, NP, CS, SS, N, dblocks, lane, dl] = MakeBlockShape(p.lay, dims);
  const int64_t b = blockIdx.x / dblocks;
  const int64_t d0 = (blockIdx.x % dblocks) * DC;
  const int64_t d = d0 + dl;
  const bool active = d < dims.dim;

  float* s_u = smem;
  float* s_dt = s_u + TT * DC;
  float* s_z = s_dt + TT * DC;
  float* s_y = s_z + TT * DC;
  float* s_B = s_y + TT * DC;
  float* s_C = s_B + TT * NP;

  float a2[K], h[K];  // A * log2(e) and the state, for states lane*K + k
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t n = lane * K + k;
    a2[k] = (active && n < N) ? p.A[d * N + n] * kLog2e : 0.f;
    h[k] = 0.f;
  }
  const float dskip = active ? p.Dskip[d] : 0.f;
  // Where the state before the next chunk's first step goes, and that step.
  float* save_to = p.chunk_states + (b * dims.nchunks * dims.dim + d) * N + lane * K;
  int64_t save_at = 0;

  for (int64_t t0 = 0; t0 < dims.length; t0 += TT) {
    const Tile tile{b, t0, d0, static_cast<int>(min(static_cast<int64_t>(TT), dims.length - t0))};
    __syncthreads();  // the previous tile's shared memory is consumed
    LoadChannels(p.u, s_u, tile, dims, CS);
    LoadDelta(p.delta, p.delta_bias, p.softplus, s_dt, nullptr, tile, dims, CS);
    if (p.has_z) LoadChannels(p.z, s_z, tile, dims, CS);
    LoadStates(p.Bm, s_B, tile, dims, SS);
    LoadStates(p.Cm, s_C, tile, dims, SS);
    __syncthreads();
    for (int tt = 0; tt < tile.tn; ++tt) {
      const int64_t t = t0 + tt;
      if (t == save_at) {
        if (active) {
#pragma unroll
          for (int k = 0; k < K; ++k) {
            if (lane * K + k < N) save_to[k] = h[k];
          }
        }
        save_at += dims.chunk;
        save_to += dims.dim * N;
      }
      const float dt = s_dt[tt * DC + dl];
      const float uu = s_u[tt * DC + dl];
      const float dtu = dt * uu;
      float part = 0.f;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int n = lane * K + k;
        h[k] = exp2f(dt * a2[k]) * h[k] + dtu * s_B[tt * NP + n];
        part += s_C[tt * NP + n] * h[k];
      }
      part = LaneSum(part, p.lay.lanes);
      if (lane == 0) {
        float out = part + dskip * uu;
        if (p.has_z) {
          const float zz = s_z[tt * DC + dl];
          out *= zz * Sigmoid(zz);
        }
        s_y[tt * DC + dl] = out;
      }
    }
    __syncthreads();
    StoreChannels(s_y, p.y, tile, dims, CS);
  }
  if (active) {
    float* dst = p.last_state + (b * dims.dim + d) * N + lane * K;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (lane * K + k < N) dst[k] = h[k];
    }
  }
}

}  // namespace selective_scan_cuda

#endif  // XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_FWD_CUH_
