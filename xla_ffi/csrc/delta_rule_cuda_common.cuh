// Device code shared by the CUDA delta-rule kernels (delta_rule_cuda_fwd.cuh,
// delta_rule_cuda_bwd.cuh): work layout and the per-thread state.
//
// One thread block per (batch, head) sequence, 128 threads. Column v of the [d_k, d_v] state
// belongs to `parts` = 128 / max(4, NextPow2(d_v)) neighbouring threads (a lane group inside
// one warp: at most 32, so d_v <= 2 leaves whole warps idle rather than summing across warps,
// which a shuffle cannot do), each holding
// rows j = part, part + parts, ... (at most R of them, R a template constant) in registers.
// Sums over rows (u = S^T k, o = S^T q, dw = dS^T k) are shuffles within a lane group; sums
// over columns (dq, dk, dbeta in the backward) are shuffles across the warp's groups and
// shared-memory atomics across warps. Steps are staged kTile at a time in shared memory.
// CUDA language only, so the test suite can compile it for the host.
#ifndef XLA_FFI_CSRC_DELTA_RULE_CUDA_COMMON_CUH_
#define XLA_FFI_CSRC_DELTA_RULE_CUDA_COMMON_CUH_

#include <cstddef>
#include <cstdint>

#include "cuda_device_util.cuh"
#include "delta_rule_args.h"

namespace delta_rule_cuda {

using cuda_device::FromF;
using cuda_device::LaneSum;
using cuda_device::StridedSum;
using cuda_device::ToF;

constexpr int kThreads = 128;
constexpr int kTile = 16;         // steps staged in shared memory at once
constexpr int64_t kMaxDv = 128;   // one column per lane group at the least
constexpr int kMaxRows = 32;      // rows of the state per thread, at most
constexpr int kMinCols = kThreads / 32;  // columns the block covers, at least (parts <= 32)

// Problem size and layout of one call.
struct Dims {
  int64_t batch, length, heads, dk, dv, chunk, nchunks;
  int parts;  // threads per state column (a power of two dividing 32)
  int cols;   // state columns the block covers: kThreads / parts >= max(dv, kMinCols)
  __host__ __device__ int64_t Row(int64_t b, int64_t t, int64_t h) const { return (b * length + t) * heads + h; }
  __host__ __device__ int64_t State(int64_t b, int64_t h) const { return (b * heads + h) * dk * dv; }
  __host__ __device__ int64_t ChunkState(int64_t b, int64_t c, int64_t h) const { return ((b * nchunks + c) * heads + h) * dk * dv; }
};

inline int NextPow2(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Fills parts and cols for d_v (1 <= d_v <= kMaxDv); returns the rows each thread holds,
// ceil(d_k / parts) (the launch picks the template R >= it; more than kMaxRows is unsupported).
// A column's lanes never span two warps: cols >= kMinCols keeps parts <= 32.
inline int64_t MakeLayout(Dims* d) {
  const int cols = NextPow2(d->dv);
  d->cols = cols < kMinCols ? kMinCols : cols;
  d->parts = kThreads / d->cols;
  return (d->dk + d->parts - 1) / d->parts;
}

// Shared floats of one block's tiles: `key_arrays` [kTile][dk] arrays, two [kTile][cols] ones
// and `scalars` [kTile] ones.
inline size_t SharedFloats(const Dims& d, int key_arrays, int scalars) {
  return size_t(kTile) * (key_arrays * d.dk + 2 * d.cols + scalars);
}

// This thread's place: its column, its part (first row), whether the column is real.
struct Lane {
  int col, part;
  bool active;
};

__device__ __forceinline__ Lane MakeLane(const Dims& d) {
  const int col = static_cast<int>(threadIdx.x) / d.parts;
  return Lane{col, static_cast<int>(threadIdx.x) % d.parts, col < d.dv};
}

// The block's sequence: batch b, head h (blockIdx.x = b * heads + h).
struct Sequence {
  int64_t b, h;
};

__device__ __forceinline__ Sequence BlockSequence(const Dims& d) {
  return Sequence{static_cast<int64_t>(blockIdx.x) / d.heads, static_cast<int64_t>(blockIdx.x) % d.heads};
}

// Loads (b, h)'s [dk, dv] state at src into the thread's rows (0 for absent rows and columns).
template <int R>
__device__ __forceinline__ void LoadRows(const float* src, const Dims& d, const Lane& l, float* S) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
    S[r] = (l.active && j < d.dk) ? src[j * d.dv + l.col] : 0.f;
  }
}

template <int R>
__device__ __forceinline__ void SaveRows(const float* S, const Dims& d, const Lane& l, float* dst) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t j = l.part + static_cast<int64_t>(r) * d.parts;
    if (l.active && j < d.dk) dst[j * d.dv + l.col] = S[r];
  }
}

// Stages steps [t0, t0 + tn) of (b, h): the [tn][dk] rows of x into dst (as float).
template <typename T>
__device__ void StageRows(const T* __restrict__ x, float* dst, const Dims& d, int64_t b, int64_t h, int64_t t0,
                          int tn, int64_t width) {
  for (int64_t i = threadIdx.x; i < tn * width; i += blockDim.x) {
    const int64_t tt = i / width, c = i % width;
    dst[i] = ToF(x[d.Row(b, t0 + tt, h) * width + c]);
  }
}

// Stages the [tn][cols] value rows (zero past dv) and the tn betas.
template <typename T>
__device__ void StageValues(const T* __restrict__ v, const T* __restrict__ beta, float* s_v, float* s_beta,
                            const Dims& d, int64_t b, int64_t h, int64_t t0, int tn) {
  for (int64_t i = threadIdx.x; i < int64_t(tn) * d.cols; i += blockDim.x) {
    const int64_t tt = i / d.cols, c = i % d.cols;
    s_v[i] = c < d.dv ? ToF(v[d.Row(b, t0 + tt, h) * d.dv + c]) : 0.f;
  }
  for (int i = threadIdx.x; i < tn; i += blockDim.x) s_beta[i] = ToF(beta[d.Row(b, t0 + i, h)]);
}

// Writes [tn][width] floats to the rows of steps [t0, t0 + tn) of (b, h) (columns < valid).
template <typename T>
__device__ void StoreRows(const float* src, T* __restrict__ x, const Dims& d, int64_t b, int64_t h, int64_t t0,
                          int tn, int64_t width, int64_t stride, int64_t valid) {
  for (int64_t i = threadIdx.x; i < tn * width; i += blockDim.x) {
    const int64_t tt = i / width, c = i % width;
    if (c < valid) x[d.Row(b, t0 + tt, h) * stride + c] = FromF<T>(src[i]);
  }
}

}  // namespace delta_rule_cuda

#endif  // XLA_FFI_CSRC_DELTA_RULE_CUDA_COMMON_CUH_
