// Device code shared by the CUDA GRU kernels (gru_cuda_fwd.cuh, gru_cuda_bwd.cuh): the tiling
// of the per-step matmuls.
//
// The recurrence is sequential in time, so the handler launches one forward kernel per step
// (two per step backward) on the stream. Each block computes a tile of kTileRows batch rows
// by kTileUnits hidden units (for all three gates), staging kChunk-deep slices of the
// operands in shared memory; each of its 128 threads owns kPairs (row, unit) pairs, so the
// gate math of a unit follows its three matmul columns in registers. CUDA language only, so
// the test suite can compile it for the host.
#ifndef XLA_FFI_CSRC_GRU_CUDA_COMMON_CUH_
#define XLA_FFI_CSRC_GRU_CUDA_COMMON_CUH_

#include <cstdint>

#include "cuda_device_util.cuh"

namespace gru_cuda {

using cuda_device::FromF;
using cuda_device::Sigmoid;
using cuda_device::ToF;

constexpr int kThreads = 128;
constexpr int kTileRows = 8;
constexpr int kTileUnits = 32;
constexpr int kChunk = 32;  // contraction depth staged at once
constexpr int kPairs = kTileRows * kTileUnits / kThreads;

struct Dims {
  int64_t batch, length, hidden;
};

// Grid of one step's kernels: batch-row tiles times hidden-unit tiles.
inline int64_t RowTiles(const Dims& d) { return (d.batch + kTileRows - 1) / kTileRows; }
inline int64_t UnitTiles(const Dims& d) { return (d.hidden + kTileUnits - 1) / kTileUnits; }

// The (row, unit) of this thread's pair i within the block's tile.
__device__ __forceinline__ int PairRow(int i) { return (static_cast<int>(threadIdx.x) + i * kThreads) / kTileUnits; }
__device__ __forceinline__ int PairUnit(int i) { return (static_cast<int>(threadIdx.x) + i * kThreads) % kTileUnits; }

// acc[i][g] += sum over k < depth of a[row_i][k] * w[k][g * H + unit_i] for the block's tile:
// `a` is [batch, lda] (rows from r0), `w` is [depth, ldw] (columns from u0 in each of `gates`
// segments of width H). Staged through s_a [kTileRows][kChunk] and s_w [kChunk][gates * kTileUnits].
template <int G>
__device__ __forceinline__ void TileMatmul(const float* __restrict__ a, int64_t lda, const float* __restrict__ w,
                                           int64_t ldw, int64_t depth, int64_t batch, int64_t H, int64_t r0,
                                           int64_t u0, float* s_a, float* s_w, float (*acc)[G]) {
  for (int64_t k0 = 0; k0 < depth; k0 += kChunk) {
    __syncthreads();
    for (int i = threadIdx.x; i < kTileRows * kChunk; i += blockDim.x) {
      const int64_t r = r0 + i / kChunk, k = k0 + i % kChunk;
      s_a[i] = (r < batch && k < depth) ? a[r * lda + k] : 0.f;
    }
    for (int i = threadIdx.x; i < kChunk * G * kTileUnits; i += blockDim.x) {
      const int64_t k = k0 + i / (G * kTileUnits);
      const int g = (i % (G * kTileUnits)) / kTileUnits;
      const int64_t u = u0 + i % kTileUnits;
      s_w[i] = (k < depth && u < H) ? w[k * ldw + g * H + u] : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < kChunk; ++kk) {
#pragma unroll
      for (int i = 0; i < kPairs; ++i) {
        const float av = s_a[PairRow(i) * kChunk + kk];
#pragma unroll
        for (int g = 0; g < G; ++g) acc[i][g] += av * s_w[(kk * G + g) * kTileUnits + PairUnit(i)];
      }
    }
  }
}

// The block's tile step: acc[i][g] = init(r, u, g) for each pair (r, u) of the tile, plus the
// tile's matmul (TileMatmul, on the operands a and w as described there), then finish(r, u,
// acc[i]) for each pair inside the batch and hidden width.
template <int G, typename Init, typename Finish>
__device__ __forceinline__ void TileStep(const float* __restrict__ a, int64_t lda, const float* __restrict__ w,
                                         int64_t ldw, int64_t depth, int64_t batch, int64_t H, float* smem,
                                         Init&& init, Finish&& finish) {
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kTileRows;
  const int64_t u0 = static_cast<int64_t>(blockIdx.y) * kTileUnits;
  float acc[kPairs][G];
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int64_t r = r0 + PairRow(i), u = u0 + PairUnit(i);
#pragma unroll
    for (int g = 0; g < G; ++g) acc[i][g] = (r < batch && u < H) ? init(r, u, g) : 0.f;
  }
  TileMatmul<G>(a, lda, w, ldw, depth, batch, H, r0, u0, smem, smem + kTileRows * kChunk, acc);
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const int64_t r = r0 + PairRow(i), u = u0 + PairUnit(i);
    if (r < batch && u < H) finish(r, u, acc[i]);
  }
}

}  // namespace gru_cuda

#endif  // XLA_FFI_CSRC_GRU_CUDA_COMMON_CUH_
