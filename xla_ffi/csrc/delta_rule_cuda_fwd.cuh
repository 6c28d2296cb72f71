// Forward kernel of the CUDA delta rule (layout in delta_rule_cuda_common.cuh): o, the last
// state and the chunk-boundary states.
#ifndef XLA_FFI_CSRC_DELTA_RULE_CUDA_FWD_CUH_
#define XLA_FFI_CSRC_DELTA_RULE_CUDA_FWD_CUH_

#include "delta_rule_cuda_common.cuh"

namespace delta_rule_cuda {

template <typename T>
struct FwdArgs : delta_rule::FwdPointers<T> {
  Dims d;
};

template <typename T, int R>
__global__ void __launch_bounds__(kThreads) DeltaRuleFwdKernel(FwdArgs<T> p) {
  float* smem = cuda_device::DynamicShared();
  const Dims& d = p.d;
  const auto [b, h] = BlockSequence(d);
  const Lane l = MakeLane(d);
  float* s_k = smem;
  float* s_q = s_k + kTile * d.dk;
  float* s_v = s_q + kTile * d.dk;
  float* s_o = s_v + kTile * d.cols;
  float* s_beta = s_o + kTile * d.cols;
  float S[R];
  LoadRows<R>(p.h0 + d.State(b, h), d, l, S);
  for (int64_t t0 = 0; t0 < d.length; t0 += kTile) {
    const int tn = static_cast<int>(min(static_cast<int64_t>(kTile), d.length - t0));
    __syncthreads();  // the previous tile is consumed
    StageRows(p.k, s_k, d, b, h, t0, tn, d.dk);
    StageRows(p.q, s_q, d, b, h, t0, tn, d.dk);
    StageValues(p.v, p.beta, s_v, s_beta, d, b, h, t0, tn);
    __syncthreads();
    for (int tt = 0; tt < tn; ++tt) {
      if ((t0 + tt) % d.chunk == 0) SaveRows<R>(S, d, l, p.chunk_states + d.ChunkState(b, (t0 + tt) / d.chunk, h));
      const float* k = s_k + tt * d.dk;
      const float* q = s_q + tt * d.dk;
      float u = 0.f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
        if (j < d.dk) u += k[j] * S[r];
      }
      u = LaneSum(u, d.parts);
      const float w = s_beta[tt] * (s_v[tt * d.cols + l.col] - u);
      float o = 0.f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
        if (j < d.dk) {
          S[r] += k[j] * w;
          o += q[j] * S[r];
        }
      }
      o = LaneSum(o, d.parts);
      if (l.part == 0) s_o[tt * d.cols + l.col] = o;
    }
    __syncthreads();
    StoreRows(s_o, p.o, d, b, h, t0, tn, d.cols, d.dv, d.dv);
  }
  if (d.length == 0) SaveRows<R>(S, d, l, p.chunk_states + d.ChunkState(b, 0, h));
  SaveRows<R>(S, d, l, p.last + d.State(b, h));
}

}  // namespace delta_rule_cuda

#endif  // XLA_FFI_CSRC_DELTA_RULE_CUDA_FWD_CUH_
