// Device code shared by the CUDA selective-scan kernels (selective_scan_cuda_fwd.cuh,
// selective_scan_cuda_bwd.cuh): work layout, launch geometry and the staging helpers.
//
// It uses only the CUDA language (no runtime API calls), so the test suite can also compile
// the kernels for the host with a thin shim of the CUDA built-ins
// (tests/xla_ffi/cuda_emulation/) and check their indexing and math against the reference on a
// machine without a GPU.
//
// Layout of the work: one thread block per (batch, block of channels). The N states of a
// channel are spread over `lanes` neighbouring threads, each holding `K` states in
// registers (K is a template parameter, N <= 256). Each thread walks the sequence in
// order; the block stages tiles of time steps in shared memory so that global loads
// and stores of (B, L, D) tensors are coalesced over channels. The reduction over
// states (y, du, ddelta) is a warp shuffle within a channel's lanes.

#ifndef XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_COMMON_CUH_
#define XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_COMMON_CUH_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda_device_util.cuh"

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

inline BwdGrid MakeBwdGrid(const Dims& dims, const Layout& lay, size_t history_budget = kHistoryBudgetBytes) {
  BwdGrid grid;
  grid.hist_len = std::min(dims.chunk, dims.length);
  grid.slot_bytes = sizeof(float) * static_cast<size_t>(grid.hist_len) * lay.per_lane * kThreads;
  const int64_t fit = grid.slot_bytes == 0 ? 1 : static_cast<int64_t>(history_budget / grid.slot_bytes);
  const int64_t max_blocks = std::max<int64_t>(1, fit);
  grid.blocks = std::min<int64_t>({WorkItems(dims, lay), max_blocks, INT32_MAX});
  return grid;
}

// ---------------------------------------------------------------------------
// Device helpers
// ---------------------------------------------------------------------------

using cuda_device::FromF;
using cuda_device::LaneSum;
using cuda_device::Sigmoid;
using cuda_device::ToF;

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

// What the forward and backward kernels' arguments share: the eight forward operands, the
// problem size, the layout and the flags.
template <typename T>
struct ScanOperands {
  const T* u;
  const T* delta;
  const float* A;
  const T* Bm;
  const T* Cm;
  const float* Dskip;
  const T* z;
  const float* delta_bias;
  Dims dims;
  Layout lay;
  bool softplus, has_z;
};

// One block's view of the layout: channels per block, steps per tile, padded N, the tiles'
// row shifts, N, channel blocks per batch row, and this thread's state lane and channel slot.
struct BlockShape {
  int DC, TT, NP, CS, SS;
  int64_t N, dblocks;
  int lane, dl;
};

__device__ __forceinline__ BlockShape MakeBlockShape(const Layout& lay, const Dims& dims) {
  return BlockShape{lay.channels,
                    lay.tile,
                    lay.state_pad,
                    lay.channel_shift,
                    lay.state_shift,
                    dims.state,
                    (dims.dim + lay.channels - 1) / lay.channels,
                    static_cast<int>(threadIdx.x % lay.lanes),
                    static_cast<int>(threadIdx.x / lay.lanes)};
}

}  // namespace selective_scan_cuda

#endif  // XLA_FFI_CSRC_SELECTIVE_SCAN_CUDA_COMMON_CUH_
