// Backward kernel of the CUDA delta rule (layout in delta_rule_cuda_common.cuh; the formulas
// are those of delta_rule_cpu_bwd.cc). For each chunk, last to first, the block recomputes the
// chunk's steps from its saved state keeping e_t = v_t - u_t per column (a per-block history
// slot in global scratch), then walks the chunk in reverse rebuilding S_{t-1} = S_t - k_t w_t^T.
#ifndef XLA_FFI_CSRC_DELTA_RULE_CUDA_BWD_CUH_
#define XLA_FFI_CSRC_DELTA_RULE_CUDA_BWD_CUH_

#include "delta_rule_cuda_common.cuh"

namespace delta_rule_cuda {

template <typename T>
struct BwdArgs : delta_rule::BwdPointers<T> {
  float* history;  // per block: min(chunk, length) * cols floats
  Dims d;
};

// The backward kernel's shared tiles.
struct BwdSmem {
  float *k, *q, *dq, *dk, *dout, *dv, *beta, *dbeta;
};

__device__ __forceinline__ BwdSmem MakeBwdSmem(float* smem, const Dims& d) {
  BwdSmem s;
  s.k = smem;
  s.q = s.k + kTile * d.dk;
  s.dq = s.q + kTile * d.dk;
  s.dk = s.dq + kTile * d.dk;
  s.dout = s.dk + kTile * d.dk;
  s.dv = s.dout + kTile * d.cols;
  s.beta = s.dv + kTile * d.cols;
  s.dbeta = s.beta + kTile;
  return s;
}

// Recomputes steps [c0, c1) from S (the chunk's saved state; S_{c1-1} on exit), saving e_t of
// the thread's column to hist[(t - c0) * cols + col].
template <typename T, int R>
__device__ __forceinline__ void RecomputeChunk(const BwdArgs<T>& p, const BwdSmem& s, const Lane& l, int64_t b,
                                               int64_t h, int64_t c0, int64_t c1, float* S, float* hist) {
  const Dims& d = p.d;
  for (int64_t t0 = c0; t0 < c1; t0 += kTile) {
    const int tn = static_cast<int>(min(static_cast<int64_t>(kTile), c1 - t0));
    __syncthreads();
    StageRows(p.k, s.k, d, b, h, t0, tn, d.dk);
    StageValues(p.v, p.beta, s.dout, s.beta, d, b, h, t0, tn);  // v in the dout tile
    __syncthreads();
    for (int tt = 0; tt < tn; ++tt) {
      const float* k = s.k + tt * d.dk;
      float u = 0.f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
        if (j < d.dk) u += k[j] * S[r];
      }
      const float e = s.dout[tt * d.cols + l.col] - LaneSum(u, d.parts);
      const float w = s.beta[tt] * e;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
        if (j < d.dk) S[r] += k[j] * w;
      }
      if (l.part == 0) hist[(t0 + tt - c0) * d.cols + l.col] = e;
    }
  }
}

// Adds x (this thread's partial for row j of column col) over the block's columns into
// *dst: shuffles across the warp's lane groups, then one shared atomic per warp and part.
__device__ __forceinline__ void AddOverColumns(float x, int parts, float* dst) {
  x = StridedSum(x, parts);
  if ((threadIdx.x & 31) < static_cast<unsigned>(parts)) atomicAdd(dst, x);
}

// One reverse step at tile row tt (step t): S_t -> S_{t-1}, dS_t -> dS_{t-1}; dq, dk, dbeta
// into the shared tiles, dv by the column's first part.
template <typename T, int R>
__device__ __forceinline__ void ReverseStep(const Dims& d, const BwdSmem& s, const Lane& l, int tt, float e,
                                            float* S, float* dS) {
  const float* k = s.k + tt * d.dk;
  const float* q = s.q + tt * d.dk;
  const float beta = s.beta[tt], w = beta * e, dov = s.dout[tt * d.cols + l.col];
  float pa[R], dw = 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
    const bool row = j < d.dk;
    if (row) dS[r] += q[j] * dov;
    AddOverColumns(row ? S[r] * dov : 0.f, d.parts, s.dq + tt * d.dk + (row ? j : 0));
    dw += row ? k[j] * dS[r] : 0.f;
    pa[r] = row ? dS[r] * w : 0.f;
  }
  dw = LaneSum(dw, d.parts);
  const float du = -beta * dw;
  if (l.part == 0 && l.active) s.dv[tt * d.cols + l.col] = beta * dw;
  const float db = LaneSum((l.part == 0 && l.active) ? dw * e : 0.f, 32);
  if ((threadIdx.x & 31) == 0) atomicAdd(&s.dbeta[tt], db);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
    const bool row = j < d.dk;
    if (row) S[r] -= k[j] * w;
    AddOverColumns(row ? pa[r] + S[r] * du : 0.f, d.parts, s.dk + tt * d.dk + (row ? j : 0));
    if (row) dS[r] += k[j] * du;
  }
}

// Walks steps [c0, c1) in reverse, tile by tile (tiles aligned to the chunk start).
template <typename T, int R>
__device__ __forceinline__ void ReverseChunk(const BwdArgs<T>& p, const BwdSmem& s, const Lane& l, int64_t b,
                                             int64_t h, int64_t c0, int64_t c1, float* S, float* dS,
                                             const float* hist) {
  const Dims& d = p.d;
  for (int64_t t0 = c0 + ((c1 - c0 - 1) / kTile) * kTile; t0 >= c0; t0 -= kTile) {
    const int tn = static_cast<int>(min(static_cast<int64_t>(kTile), c1 - t0));
    __syncthreads();
    StageRows(p.k, s.k, d, b, h, t0, tn, d.dk);
    StageRows(p.q, s.q, d, b, h, t0, tn, d.dk);
    StageValues(p.dout, p.beta, s.dout, s.beta, d, b, h, t0, tn);
    for (int i = threadIdx.x; i < tn * d.dk; i += blockDim.x) s.dq[i] = s.dk[i] = 0.f;
    for (int i = threadIdx.x; i < tn; i += blockDim.x) s.dbeta[i] = 0.f;
    __syncthreads();
    for (int tt = tn - 1; tt >= 0; --tt) ReverseStep<T, R>(d, s, l, tt, hist[(t0 + tt - c0) * d.cols + l.col], S, dS);
    __syncthreads();
    StoreRows(s.dq, p.dq, d, b, h, t0, tn, d.dk, d.dk, d.dk);
    StoreRows(s.dk, p.dk, d, b, h, t0, tn, d.dk, d.dk, d.dk);
    StoreRows(s.dv, p.dv, d, b, h, t0, tn, d.cols, d.dv, d.dv);
    StoreRows(s.dbeta, p.dbeta, d, b, h, t0, tn, 1, 1, 1);
  }
}

template <typename T, int R>
__global__ void __launch_bounds__(kThreads) DeltaRuleBwdKernel(BwdArgs<T> p) {
  float* smem = cuda_device::DynamicShared();
  const BwdSmem s = MakeBwdSmem(smem, p.d);
  const Dims& d = p.d;
  const Lane l = MakeLane(d);
  const auto [b, h] = BlockSequence(d);
  float* hist = p.history + static_cast<int64_t>(blockIdx.x) * min(d.chunk, d.length) * d.cols;
  float S[R], dS[R];
  LoadRows<R>(p.dlast + d.State(b, h), d, l, dS);
  for (int64_t c = d.nchunks - 1; c >= 0; --c) {
    const int64_t c0 = c * d.chunk, c1 = min(d.length, c0 + d.chunk);
    LoadRows<R>(p.chunk_states + d.ChunkState(b, c, h), d, l, S);
    RecomputeChunk<T, R>(p, s, l, b, h, c0, c1, S, hist);
    ReverseChunk<T, R>(p, s, l, b, h, c0, c1, S, dS, hist);
  }
  SaveRows<R>(dS, d, l, p.dh0 + d.State(b, h));
}

}  // namespace delta_rule_cuda

#endif  // XLA_FFI_CSRC_DELTA_RULE_CUDA_BWD_CUH_
