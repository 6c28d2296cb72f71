// Device code of the CUDA selective scan: work layout, kernels and launch geometry.
//
// Included by selective_scan_cuda.cu (the FFI handlers). It uses only the CUDA language
// (no runtime API calls), so the test suite can also compile it for the host with a thin
// shim of the CUDA built-ins (tests/xla_ffi/cuda_emulation/) and check the kernels'
// indexing and math against the reference on a machine without a GPU.
//
// Layout of the work: one thread block per (batch, block of channels). The N states of a
// channel are spread over `lanes` neighbouring threads, each holding `K` states in
// registers (K is a template parameter, N <= 256). Each thread walks the sequence in
// order; the block stages tiles of time steps in shared memory so that global loads
// and stores of (B, L, D) tensors are coalesced over channels. The reduction over
// states (y, du, ddelta) is a warp shuffle within a channel's lanes.
//
// Backward: for each chunk, last to first, recompute h forward from the saved
// chunk-boundary state (the history of that one chunk lives in a scratch workspace),
// then walk the chunk in reverse carrying dh. dB/dC are reduced over channels in shared
// memory, then over channel blocks with atomicAdd into float32 outputs zeroed on the
// stream; dA, dDskip, ddelta_bias with atomicAdd over batch.

#ifndef XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_KERNELS_CUH_
#define XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_KERNELS_CUH_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace selective_scan_cuda {

constexpr int kThreads = 128;              // threads per block
constexpr int64_t kMaxState = 256;         // largest supported N (32 lanes x 8 states)
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kFwdChannelBudget = 2048;    // tile * channels per block, forward
constexpr int kFwdStateBudget = 1024;      // tile * padded N, forward
constexpr int kBwdChannelBudget = 1024;    // tile * channels per block, backward
constexpr int kBwdStateBudget = 512;       // tile * padded N, backward
constexpr int kFwdChannelArrays = 4;       // u, delta', z, y
constexpr int kFwdStateArrays = 2;         // Bm, Cm
constexpr int kBwdChannelArrays = 8;       // u, delta', softplus', z, dy, du, ddelta, dz
constexpr int kBwdStateArrays = 4;         // Bm, Cm, dB, dC
constexpr size_t kHistoryBudgetBytes = size_t{256} << 20;  // backward scratch cap

// ---------------------------------------------------------------------------
// Work layout
// ---------------------------------------------------------------------------

// How one block divides channels, states and time.
struct Layout {
  int state_pad;  // N rounded up to a power of two
  int per_lane;   // K: states held in registers by one thread
  int lanes;      // threads sharing one channel: state_pad / per_lane (divides 32)
  int channels;   // channels per block: kThreads / lanes
  int channel_shift, state_shift;  // log2 of channels and state_pad (row widths of the tiles)
  int tile;       // time steps staged in shared memory at once
};

inline int NextPow2(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

inline int Log2(int pow2) {
  int shift = 0;
  while ((1 << shift) < pow2) ++shift;
  return shift;
}

// The default states per thread for a padded state size: few lanes per channel (cheap
// reductions) while one warp still holds at least 8 channels.
inline int DefaultPerLane(int state_pad) {
  return state_pad <= 4 ? state_pad : (state_pad <= 32 ? 4 : 8);
}

// Whether `per_lane` states per thread is a valid layout for padded state size `state_pad`:
// a power of two in 1..8 (the kernels' instantiations), at most state_pad, with the
// state_pad / per_lane lanes of one channel fitting in a warp.
inline bool ValidPerLane(int per_lane, int state_pad) {
  const bool pow2 = per_lane > 0 && (per_lane & (per_lane - 1)) == 0;
  return pow2 && per_lane <= 8 && per_lane <= state_pad && state_pad / per_lane <= 32;
}

// Layout for state size n (1 <= n <= kMaxState) under the given shared-memory budgets;
// per_lane = 0 picks DefaultPerLane, otherwise it must satisfy ValidPerLane.
inline Layout MakeLayout(int64_t n, int channel_budget, int state_budget, int per_lane = 0) {
  Layout lay;
  lay.state_pad = NextPow2(n);
  lay.per_lane = per_lane > 0 ? per_lane : DefaultPerLane(lay.state_pad);
  lay.lanes = lay.state_pad / lay.per_lane;
  lay.channels = kThreads / lay.lanes;
  lay.channel_shift = Log2(lay.channels);
  lay.state_shift = Log2(lay.state_pad);
  lay.tile = std::max(1, std::min(channel_budget / lay.channels, state_budget / lay.state_pad));
  return lay;
}

inline size_t SharedBytes(const Layout& lay, int channel_arrays, int state_arrays) {
  return sizeof(float) * static_cast<size_t>(lay.tile) *
         (static_cast<size_t>(channel_arrays) * lay.channels +
          static_cast<size_t>(state_arrays) * lay.state_pad);
}

// Problem sizes, shared by both kernels.
struct Dims {
  int64_t batch, length, dim, state, chunk, nchunks;
};

// The staged slab of one tile: batch b, steps [t0, t0 + tn), channels [d0, d0 + channels).
struct Tile {
  int64_t b, t0, d0;
  int tn;
};

// Blocks of (batch, channel block) work: the forward grid, and the backward's work list.
inline int64_t WorkItems(const Dims& dims, const Layout& lay) {
  return dims.batch * ((dims.dim + lay.channels - 1) / lay.channels);
}

// Backward launch: one history slot (h after each step of one chunk) per block; the grid
// strides over work items so the workspace stays under kHistoryBudgetBytes.
struct BwdGrid {
  int64_t blocks;     // grid size
  int64_t hist_len;   // steps per history slot: min(chunk, length)
  size_t slot_bytes;  // bytes per history slot
};

inline BwdGrid MakeBwdGrid(const Dims& dims, const Layout& lay) {
  BwdGrid grid;
  grid.hist_len = std::min(dims.chunk, dims.length);
  grid.slot_bytes = sizeof(float) * static_cast<size_t>(grid.hist_len) * lay.per_lane * kThreads;
  const int64_t fit = grid.slot_bytes == 0 ? 1 : static_cast<int64_t>(kHistoryBudgetBytes / grid.slot_bytes);
  const int64_t max_blocks = std::max<int64_t>(1, fit);
  grid.blocks = std::min<int64_t>({WorkItems(dims, lay), max_blocks, INT32_MAX});
  return grid;
}

// ---------------------------------------------------------------------------
// Device helpers
// ---------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ float ToF(T v);
template <>
__device__ __forceinline__ float ToF<float>(float v) { return v; }
template <>
__device__ __forceinline__ float ToF<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromF(float v);
template <>
__device__ __forceinline__ float FromF<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

__device__ __forceinline__ float Sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// Sum of v over the `lanes` neighbouring threads of one channel; every lane gets the sum.
// All 32 threads of the warp must call it (lanes divides 32, groups are aligned).
__device__ __forceinline__ float LaneSum(float v, int lanes) {
  for (int offset = lanes >> 1; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Tiles are row-major [step][column] with a power-of-two row width 1 << shift, so that
// the index split costs a shift and a mask rather than a division.

// Copies tile rows of a (B, L, D) tensor into dst[tn][1 << shift] as float; zeros past D.
template <typename T>
__device__ void LoadChannels(const T* __restrict__ src, float* dst, const Tile& tile, const Dims& dims,
                             int shift) {
  for (int i = threadIdx.x; i < (tile.tn << shift); i += blockDim.x) {
    const int tt = i >> shift;
    const int64_t d = tile.d0 + (i & ((1 << shift) - 1));
    dst[i] = d < dims.dim ? ToF(src[(tile.b * dims.length + tile.t0 + tt) * dims.dim + d]) : 0.f;
  }
}

// Copies tile rows of a (B, L, N) tensor into dst[tn][1 << shift] as float; zeros past N.
template <typename T>
__device__ void LoadStates(const T* __restrict__ src, float* dst, const Tile& tile, const Dims& dims,
                           int shift) {
  for (int i = threadIdx.x; i < (tile.tn << shift); i += blockDim.x) {
    const int tt = i >> shift;
    const int n = i & ((1 << shift) - 1);
    dst[i] = n < dims.state ? ToF(src[(tile.b * dims.length + tile.t0 + tt) * dims.state + n]) : 0.f;
  }
}

// Stages delta' = softplus(delta + bias) (or delta + bias) and, when dsp is given, the
// derivative of delta' with respect to delta (sigmoid, or 1 without softplus).
template <typename T>
__device__ void LoadDelta(const T* __restrict__ delta, const float* __restrict__ bias, bool softplus,
                          float* dt, float* dsp, const Tile& tile, const Dims& dims, int shift) {
  for (int i = threadIdx.x; i < (tile.tn << shift); i += blockDim.x) {
    const int tt = i >> shift;
    const int64_t d = tile.d0 + (i & ((1 << shift) - 1));
    float x = 0.f;
    if (d < dims.dim) {
      x = ToF(delta[(tile.b * dims.length + tile.t0 + tt) * dims.dim + d]) + bias[d];
    }
    const bool linear = !softplus || x > 20.f;
    dt[i] = linear ? x : log1pf(expf(x));
    if (dsp != nullptr) dsp[i] = linear ? 1.f : Sigmoid(x);
  }
}

// Writes src[tn][1 << shift] to tile rows of a (B, L, D) tensor of type T.
template <typename T>
__device__ void StoreChannels(const float* src, T* __restrict__ dst, const Tile& tile, const Dims& dims,
                              int shift) {
  for (int i = threadIdx.x; i < (tile.tn << shift); i += blockDim.x) {
    const int tt = i >> shift;
    const int64_t d = tile.d0 + (i & ((1 << shift) - 1));
    if (d < dims.dim) dst[(tile.b * dims.length + tile.t0 + tt) * dims.dim + d] = FromF<T>(src[i]);
  }
}

// Adds src[tn][1 << shift] into tile rows of a float (B, L, N) tensor (atomic: summed over
// channel blocks).
__device__ inline void AtomicAddStates(const float* src, float* __restrict__ dst, const Tile& tile,
                                       const Dims& dims, int shift) {
  for (int i = threadIdx.x; i < (tile.tn << shift); i += blockDim.x) {
    const int tt = i >> shift;
    const int n = i & ((1 << shift) - 1);
    if (n < dims.state) atomicAdd(&dst[(tile.b * dims.length + tile.t0 + tt) * dims.state + n], src[i]);
  }
}

// ---------------------------------------------------------------------------
// Forward kernel
// ---------------------------------------------------------------------------

template <typename T>
struct FwdArgs {
  const T* u;
  const T* delta;
  const float* A;
  const T* Bm;
  const T* Cm;
  const float* Dskip;
  const T* z;
  const float* delta_bias;
  T* y;
  float* last_state;    // (B, D, N)
  float* chunk_states;  // (B, nchunks, D, N)
  Dims dims;
  Layout lay;
  bool softplus, has_z;
};

template <typename T, int K>
__global__ void __launch_bounds__(kThreads) SelectiveScanFwdKernel(FwdArgs<T> p) {
  extern __shared__ float smem[];
  const Dims& dims = p.dims;
  const int DC = p.lay.channels, TT = p.lay.tile, NP = p.lay.state_pad;
  const int CS = p.lay.channel_shift, SS = p.lay.state_shift;
  const int64_t N = dims.state;
  const int64_t dblocks = (dims.dim + DC - 1) / DC;
  const int64_t b = blockIdx.x / dblocks;
  const int64_t d0 = (blockIdx.x % dblocks) * DC;
  const int lane = threadIdx.x % p.lay.lanes;
  const int dl = threadIdx.x / p.lay.lanes;
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

// ---------------------------------------------------------------------------
// Backward kernel
// ---------------------------------------------------------------------------

template <typename T>
struct BwdArgs {
  const T* u;
  const T* delta;
  const float* A;
  const T* Bm;
  const T* Cm;
  const float* Dskip;
  const T* z;
  const float* delta_bias;
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
  Dims dims;
  Layout lay;
  bool softplus, has_z;
};

template <typename T, int K>
__global__ void __launch_bounds__(kThreads) SelectiveScanBwdKernel(BwdArgs<T> p) {
  extern __shared__ float smem[];
  const Dims& dims = p.dims;
  const int DC = p.lay.channels, TT = p.lay.tile, NP = p.lay.state_pad;
  const int CS = p.lay.channel_shift, SS = p.lay.state_shift;
  const int64_t N = dims.state;
  const int64_t dblocks = (dims.dim + DC - 1) / DC;
  const int lane = threadIdx.x % p.lay.lanes;
  const int dl = threadIdx.x / p.lay.lanes;

  const int64_t ch = static_cast<int64_t>(TT) * DC;
  float* s_u = smem;
  float* s_dt = s_u + ch;
  float* s_dsp = s_dt + ch;
  float* s_z = s_dsp + ch;
  float* s_dy = s_z + ch;
  float* s_du = s_dy + ch;
  float* s_ddt = s_du + ch;
  float* s_dz = s_ddt + ch;
  float* s_B = s_dz + ch;
  float* s_C = s_B + TT * NP;
  float* s_dB = s_C + TT * NP;
  float* s_dC = s_dB + TT * NP;
  // This block's history slot: h after each step of the current chunk, [step][k][thread].
  float* hist = p.history + static_cast<int64_t>(blockIdx.x) * p.hist_len * K * kThreads + threadIdx.x;

  for (int64_t work = blockIdx.x; work < dims.batch * dblocks; work += gridDim.x) {
    const int64_t b = work / dblocks;
    const int64_t d0 = (work % dblocks) * DC;
    const int64_t d = d0 + dl;
    const bool active = d < dims.dim;

    float a2[K], af[K], g[K], dA_acc[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t n = lane * K + k;
      const bool live = active && n < N;
      af[k] = live ? p.A[d * N + n] : 0.f;
      a2[k] = af[k] * kLog2e;
      g[k] = live ? p.dlast[(b * dims.dim + d) * N + n] : 0.f;  // dL/dh flowing in from later steps
      dA_acc[k] = 0.f;
    }
    const float dskip = active ? p.Dskip[d] : 0.f;
    float dD_acc = 0.f, dbias_acc = 0.f;

    for (int64_t c = dims.nchunks - 1; c >= 0; --c) {
      const int64_t c0 = c * dims.chunk;
      const int64_t c1 = min(dims.length, c0 + dims.chunk);
      float h0[K], h[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t n = lane * K + k;
        h0[k] = (active && n < N) ? p.chunk_states[((b * dims.nchunks + c) * dims.dim + d) * N + n] : 0.f;
        h[k] = h0[k];
      }
      // Recompute the chunk's states forward into the history slot.
      for (int64_t t0 = c0; t0 < c1; t0 += TT) {
        const Tile tile{b, t0, d0, static_cast<int>(min(static_cast<int64_t>(TT), c1 - t0))};
        __syncthreads();
        LoadChannels(p.u, s_u, tile, dims, CS);
        LoadDelta(p.delta, p.delta_bias, p.softplus, s_dt, nullptr, tile, dims, CS);
        LoadStates(p.Bm, s_B, tile, dims, SS);
        __syncthreads();
        for (int tt = 0; tt < tile.tn; ++tt) {
          const float dt = s_dt[tt * DC + dl];
          const float dtu = dt * s_u[tt * DC + dl];
          float* slot = hist + (t0 + tt - c0) * K * kThreads;
#pragma unroll
          for (int k = 0; k < K; ++k) {
            h[k] = exp2f(dt * a2[k]) * h[k] + dtu * s_B[tt * NP + lane * K + k];
            slot[k * kThreads] = h[k];
          }
        }
      }
      // Walk the chunk in reverse, tile by tile (tiles aligned to the chunk start).
      for (int64_t t0 = c0 + ((c1 - c0 - 1) / TT) * TT; t0 >= c0; t0 -= TT) {
        const Tile tile{b, t0, d0, static_cast<int>(min(static_cast<int64_t>(TT), c1 - t0))};
        __syncthreads();
        LoadChannels(p.u, s_u, tile, dims, CS);
        LoadDelta(p.delta, p.delta_bias, p.softplus, s_dt, s_dsp, tile, dims, CS);
        if (p.has_z) LoadChannels(p.z, s_z, tile, dims, CS);
        LoadChannels(p.dy, s_dy, tile, dims, CS);
        LoadStates(p.Bm, s_B, tile, dims, SS);
        LoadStates(p.Cm, s_C, tile, dims, SS);
        for (int i = threadIdx.x; i < tile.tn * NP; i += blockDim.x) {
          s_dB[i] = 0.f;
          s_dC[i] = 0.f;
        }
        __syncthreads();
        for (int tt = tile.tn - 1; tt >= 0; --tt) {
          const int64_t j = t0 + tt - c0;  // step within the chunk
          const float dt = s_dt[tt * DC + dl];
          const float uu = s_u[tt * DC + dl];
          const float dyv = s_dy[tt * DC + dl];
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
            for (int k = 0; k < K; ++k) part += s_C[tt * NP + lane * K + k] * ht[k];
            const float yv = LaneSum(part, p.lay.lanes) + dskip * uu;
            const float zz = s_z[tt * DC + dl];
            const float sz = Sigmoid(zz);
            dyp = dyv * zz * sz;
            dzv = dyv * yv * sz * (1.f + zz * (1.f - sz));
          }
          float p_du = 0.f, p_ddt = 0.f;
#pragma unroll
          for (int k = 0; k < K; ++k) {
            const int n = lane * K + k;
            const float bn = s_B[tt * NP + n];
            const float a = exp2f(dt * a2[k]);
            const float dh = g[k] + s_C[tt * NP + n] * dyp;
            dA_acc[k] += dh * dt * a * hp[k];
            p_ddt += dh * (bn * uu + af[k] * a * hp[k]);
            p_du += dh * dt * bn;
            if (active && n < N) {
              atomicAdd(&s_dB[tt * NP + n], dh * dt * uu);
              atomicAdd(&s_dC[tt * NP + n], dyp * ht[k]);
            }
            g[k] = dh * a;
          }
          p_du = LaneSum(p_du, p.lay.lanes);
          p_ddt = LaneSum(p_ddt, p.lay.lanes);
          if (lane == 0) {
            const float ddt_raw = p_ddt * s_dsp[tt * DC + dl];
            s_du[tt * DC + dl] = p_du + dskip * dyp;
            s_ddt[tt * DC + dl] = ddt_raw;
            s_dz[tt * DC + dl] = dzv;
            dD_acc += dyp * uu;
            dbias_acc += ddt_raw;
          }
        }
        __syncthreads();
        StoreChannels(s_du, p.du, tile, dims, CS);
        StoreChannels(s_ddt, p.ddelta, tile, dims, CS);
        if (p.has_z) StoreChannels(s_dz, p.dz, tile, dims, CS);
        AtomicAddStates(s_dB, p.dB, tile, dims, SS);
        AtomicAddStates(s_dC, p.dC, tile, dims, SS);
      }
    }
    if (active) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        if (lane * K + k < N) atomicAdd(&p.dA[d * N + lane * K + k], dA_acc[k]);
      }
      if (lane == 0) {
        atomicAdd(&p.dDskip[d], dD_acc);
        atomicAdd(&p.ddelta_bias[d], dbias_acc);
      }
    }
  }
}

}  // namespace selective_scan_cuda

#endif  // XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_KERNELS_CUH_
