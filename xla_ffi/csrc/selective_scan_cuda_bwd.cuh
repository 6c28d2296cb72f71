// Backward kernel of the CUDA selective scan (layout in selective_scan_cuda_common.cuh).
//
// For each chunk, last to first, recompute h forward from the saved chunk-boundary state
// (the history of that one chunk lives in a scratch workspace), then walk the chunk in
// reverse carrying dh. dB/dC are reduced over channels in shared memory, then over channel
// blocks with atomicAdd into float32 outputs zeroed on the stream; dA, dDskip, ddelta_bias
// with atomicAdd over batch.

#ifndef XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_BWD_CUH_
#define XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_BWD_CUH_

#include "selective_scan_cuda_common.cuh"

namespace selective_scan_cuda {

template <typename T>
struct BwdArgs : ScanOperands<T> {
  const float* chunk_states;  // (B, nchunks, D, N)
  const T* dy;
  const float* dlast;  // (B, D, N)
  T* du;
  T* ddelta;
  float* dA;      // (D, N), zeroed
  float* dB;      // (B, L, N), zeroed
  float* dC;      // (B, L, N), zeroed
  float* dDskip;  // (D,), zeroed
  T* dz;
  float* ddelta_bias;  // (D,), zeroed
  float* history;      // per block: hist_len * K * kThreads floats
  int64_t hist_len;    // min(chunk, length)
};

// The backward kernel's shared-memory tiles: [tile][channel] rows of the channel arrays and
// [tile][padded N] rows of the state arrays.
struct BwdSmem {
  float *u, *dt, *dsp, *z, *dy, *du, *ddt, *dz, *B, *C, *dB, *dC;
};

__device__ __forceinline__ BwdSmem MakeBwdSmem(float* smem, const BlockShape& bs) {
  const int64_t ch = static_cast<int64_t>(bs.TT) * bs.DC, st = static_cast<int64_t>(bs.TT) * bs.NP;
  BwdSmem s;
  s.u = smem;
  s.dt = s.u + ch;
  s.dsp = s.dt + ch;
  s.z = s.dsp + ch;
  s.dy = s.z + ch;
  s.du = s.dy + ch;
  s.ddt = s.du + ch;
  s.dz = s.ddt + ch;
  s.B = s.dz + ch;
  s.C = s.B + st;
  s.dB = s.C + st;
  s.dC = s.dB + st;
  return s;
}

// One thread's part of a (batch, channel block) work item: where it is, its K values of A
// (and A log2(e)), and what it accumulates: dL/dh flowing back from later steps (g), dA,
// dDskip, ddelta_bias.
template <int K>
struct BwdItem {
  int64_t b, d0, d;
  bool active;
  float a2[K], af[K], g[K], dA[K];
  float dskip, dD, dbias;
};

// Recomputes the states of steps [c0, c1) from h0 into the thread's history slot
// (h after step c0 + j at hist[j * K * kThreads + k * kThreads]).
template <typename T, int K>
__device__ __forceinline__ void RecomputeChunk(const BwdArgs<T>& p, const BwdSmem& s, const BlockShape& bs,
                                               const BwdItem<K>& it, int64_t c0, int64_t c1, const float* h0,
                                               float* hist) {
  float h[K];
#pragma unroll
  for (int k = 0; k < K; ++k) h[k] = h0[k];
  for (int64_t t0 = c0; t0 < c1; t0 += bs.TT) {
    const Tile tile{it.b, t0, it.d0, static_cast<int>(min(static_cast<int64_t>(bs.TT), c1 - t0))};
    __syncthreads();
    LoadChannels(p.u, s.u, tile, p.dims, bs.CS);
    LoadDelta(p.delta, p.delta_bias, p.softplus, s.dt, nullptr, tile, p.dims, bs.CS);
    LoadStates(p.Bm, s.B, tile, p.dims, bs.SS);
    __syncthreads();
    for (int tt = 0; tt < tile.tn; ++tt) {
      const float dt = s.dt[tt * bs.DC + bs.dl];
      const float dtu = dt * s.u[tt * bs.DC + bs.dl];
      float* slot = hist + (t0 + tt - c0) * K * kThreads;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        h[k] = exp2f(dt * it.a2[k]) * h[k] + dtu * s.B[tt * bs.NP + bs.lane * K + k];
        slot[k * kThreads] = h[k];
      }
    }
  }
}

// One step of the reverse walk at tile row tt (step j of its chunk): the gate's and the
// recurrence's gradients for this thread's states; du, ddelta, dz and the dB, dC rows go to
// shared memory, dA, dDskip, ddelta_bias and g are carried in `it`.
template <typename T, int K>
__device__ __forceinline__ void ReverseStep(const BwdArgs<T>& p, const BwdSmem& s, const BlockShape& bs,
                                            BwdItem<K>& it, int tt, int64_t j, const float* h0,
                                            const float* hist) {
  const int DC = bs.DC, NP = bs.NP, dl = bs.dl, lane = bs.lane;
  const float dt = s.dt[tt * DC + dl];
  const float uu = s.u[tt * DC + dl];
  const float dyv = s.dy[tt * DC + dl];
  float ht[K], hp[K];  // h_t and h_{t-1}
#pragma unroll
  for (int k = 0; k < K; ++k) {
    ht[k] = hist[(j * K + k) * kThreads];
    hp[k] = j > 0 ? hist[((j - 1) * K + k) * kThreads] : h0[k];
  }
  float dyp = dyv;  // cotangent of y before the gate
  float dzv = 0.f;
  if (p.has_z) {
    float part = 0.f;
#pragma unroll
    for (int k = 0; k < K; ++k) part += s.C[tt * NP + lane * K + k] * ht[k];
    const float yv = LaneSum(part, p.lay.lanes) + it.dskip * uu;
    const float zz = s.z[tt * DC + dl];
    const float sz = Sigmoid(zz);
    dyp = dyv * zz * sz;
    dzv = dyv * yv * sz * (1.f + zz * (1.f - sz));
  }
  float p_du = 0.f, p_ddt = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int n = lane * K + k;
    const float bn = s.B[tt * NP + n];
    const float a = exp2f(dt * it.a2[k]);
    const float dh = it.g[k] + s.C[tt * NP + n] * dyp;
    it.dA[k] += dh * dt * a * hp[k];
    p_ddt += dh * (bn * uu + it.af[k] * a * hp[k]);
    p_du += dh * dt * bn;
    if (it.active && n < bs.N) {
      atomicAdd(&s.dB[tt * NP + n], dh * dt * uu);
      atomicAdd(&s.dC[tt * NP + n], dyp * ht[k]);
    }
    it.g[k] = dh * a;
  }
  p_du = LaneSum(p_du, p.lay.lanes);
  p_ddt = LaneSum(p_ddt, p.lay.lanes);
  if (lane == 0) {
    const float ddt_raw = p_ddt * s.dsp[tt * DC + dl];
    s.du[tt * DC + dl] = p_du + it.dskip * dyp;
    s.ddt[tt * DC + dl] = ddt_raw;
    s.dz[tt * DC + dl] = dzv;
    it.dD += dyp * uu;
    it.dbias += ddt_raw;
  }
}

// Walks the chunk [c0, c1) in reverse, tile by tile (tiles aligned to the chunk start):
// stages a tile's inputs, runs ReverseStep over its rows, writes its gradients.
template <typename T, int K>
__device__ __forceinline__ void ReverseChunk(const BwdArgs<T>& p, const BwdSmem& s, const BlockShape& bs,
                                             BwdItem<K>& it, int64_t c0, int64_t c1, const float* h0,
                                             const float* hist) {
  const Dims& dims = p.dims;
  for (int64_t t0 = c0 + ((c1 - c0 - 1) / bs.TT) * bs.TT; t0 >= c0; t0 -= bs.TT) {
    const Tile tile{it.b, t0, it.d0, static_cast<int>(min(static_cast<int64_t>(bs.TT), c1 - t0))};
    __syncthreads();
    LoadChannels(p.u, s.u, tile, dims, bs.CS);
    LoadDelta(p.delta, p.delta_bias, p.softplus, s.dt, s.dsp, tile, dims, bs.CS);
    if (p.has_z) LoadChannels(p.z, s.z, tile, dims, bs.CS);
    LoadChannels(p.dy, s.dy, tile, dims, bs.CS);
    LoadStates(p.Bm, s.B, tile, dims, bs.SS);
    LoadStates(p.Cm, s.C, tile, dims, bs.SS);
    for (int i = threadIdx.x; i < tile.tn * bs.NP; i += blockDim.x) {
      s.dB[i] = 0.f;
      s.dC[i] = 0.f;
    }
    __syncthreads();
    for (int tt = tile.tn - 1; tt >= 0; --tt) ReverseStep<T, K>(p, s, bs, it, tt, t0 + tt - c0, h0, hist);
    __syncthreads();
    StoreChannels(s.du, p.du, tile, dims, bs.CS);
    StoreChannels(s.ddt, p.ddelta, tile, dims, bs.CS);
    if (p.has_z) StoreChannels(s.dz, p.dz, tile, dims, bs.CS);
    AtomicAddStates(s.dB, p.dB, tile, dims, bs.SS);
    AtomicAddStates(s.dC, p.dC, tile, dims, bs.SS);
  }
}

template <typename T, int K>
__global__ void __launch_bounds__(kThreads) SelectiveScanBwdKernel(BwdArgs<T> p) {
  float* smem = cuda_device::DynamicShared();
  const Dims& dims = p.dims;
  const BlockShape bs = MakeBlockShape(p.lay, dims);
  const BwdSmem s = MakeBwdSmem(smem, bs);
  const int64_t N = bs.N;
  // This block's history slot: h after each step of the current chunk, [step][k][thread].
  float* hist = p.history + static_cast<int64_t>(blockIdx.x) * p.hist_len * K * kThreads + threadIdx.x;

  for (int64_t work = blockIdx.x; work < dims.batch * bs.dblocks; work += gridDim.x) {
    BwdItem<K> it;
    it.b = work / bs.dblocks;
    it.d0 = (work % bs.dblocks) * bs.DC;
    it.d = it.d0 + bs.dl;
    it.active = it.d < dims.dim;
    const int64_t d = it.d;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t n = bs.lane * K + k;
      const bool live = it.active && n < N;
      it.af[k] = live ? p.A[d * N + n] : 0.f;
      it.a2[k] = it.af[k] * kLog2e;
      it.g[k] = live ? p.dlast[(it.b * dims.dim + d) * N + n] : 0.f;
      it.dA[k] = 0.f;
    }
    it.dskip = it.active ? p.Dskip[d] : 0.f;
    it.dD = it.dbias = 0.f;

    for (int64_t c = dims.nchunks - 1; c >= 0; --c) {
      const int64_t c0 = c * dims.chunk;
      const int64_t c1 = min(dims.length, c0 + dims.chunk);
      float h0[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t n = bs.lane * K + k;
        h0[k] = (it.active && n < N) ? p.chunk_states[((it.b * dims.nchunks + c) * dims.dim + d) * N + n] : 0.f;
      }
      RecomputeChunk<T, K>(p, s, bs, it, c0, c1, h0, hist);
      ReverseChunk<T, K>(p, s, bs, it, c0, c1, h0, hist);
    }
    if (it.active) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (bs.lane * K + k < N) atomicAdd(&p.dA[d * N + bs.lane * K + k], it.dA[k]);
      }
      if (bs.lane == 0) {
        atomicAdd(&p.dDskip[d], it.dD);
        atomicAdd(&p.ddelta_bias[d], it.dbias);
      }
    }
  }
}

}  // namespace selective_scan_cuda

#endif  // XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_BWD_CUH_
