// Forward pass of the CPU selective scan (see selective_scan_cpu.h): y, the last state and
// the chunk-boundary states the backward pass recomputes from.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "selective_scan_cpu.h"

namespace selective_scan::cpu {
namespace {

// Scratch of one forward worker for a range of up to `blocks` (<= kMaxFwdTile) channel blocks:
// a segment's delta' per block and its B and C rows, each block's state and constants.
struct FwdScratch {
  FwdScratch(int64_t blocks, int64_t state)
      : arena(size_t(blocks * kSegment * kLanes + 2 * kSegment * state +
                     blocks * ((2 * state + 2) * kLanes + 1))) {
    dt = arena.Take(blocks * kSegment * kLanes);
    h = arena.Take(blocks * state * kLanes);
    At2 = arena.Take(blocks * state * kLanes);
    Amax = arena.Take(blocks);
    Dk = arena.Take(blocks * kLanes);
    bias = arena.Take(blocks * kLanes);
    Bc = arena.Take(kSegment * state);
    Cc = arena.Take(kSegment * state);
  }
  FloatArena arena;
  float *dt, *h, *At2, *Amax, *Dk, *bias, *Bc, *Cc;
};

// Forward for one (batch, range of `tile` channel blocks): y, last state, chunk-boundary
// states. Time is the outer loop and the range's blocks the inner one, so each step reads one
// contiguous row of u, delta and z and writes one of y (tile * kLanes channels, a fixed stride
// apart from step to step: a pattern the hardware prefetcher follows), with every block's
// state and constants in scratch. Per segment of kSegment steps, delta' (bias, softplus) is
// computed first, which tells whether the segment's exps need the range clamp.
template <typename T>
FFI_INLINE void FwdTaskBody(const FwdArgs<T>& a, int64_t task, int64_t tile, FwdScratch& s) {
  const ScanDims& d = a.d;
  const int64_t L = d.length, D = d.channels, N = d.state;
  const int64_t nblocks = (D + kLanes - 1) / kLanes, ntiles = (nblocks + tile - 1) / tile;
  const int64_t b = task / ntiles, blk0 = (task % ntiles) * tile;
  const int64_t nb = std::min(tile, nblocks - blk0);
  auto first = [&](int64_t j) { return (blk0 + j) * kLanes; };  // first channel of block j
  auto lanes = [&](int64_t j) { return int(std::min<int64_t>(kLanes, D - first(j))); };
  for (int64_t j = 0; j < nb; ++j) {
    LoadBlockConstants(d, a.A, a.Dskip, a.delta_bias, first(j), lanes(j), nullptr, s.At2 + j * N * kLanes,
                       s.Dk + j * kLanes, s.bias + j * kLanes);
    s.Amax[j] = MaxAbs(s.At2 + j * N * kLanes, N * kLanes);
  }
  std::fill(s.h, s.h + nb * N * kLanes, 0.0f);
  auto save = [&](float* dst) {  // every block's state into a [D, N] slice
    for (int64_t j = 0; j < nb; ++j) SaveState(s.h + j * N * kLanes, N, lanes(j), dst + first(j) * N);
  };
  const T* z = d.has_z ? a.z : nullptr;
  const int64_t width = std::min(nb * kLanes, D - first(0));  // channels of the task's rows
  for (int64_t t0 = 0; t0 < L;) {
    if (t0 % d.chunk == 0) save(a.chunk_states + (b * d.nchunks + t0 / d.chunk) * D * N);
    const int64_t t1 = std::min({L, t0 + kSegment, (t0 / d.chunk + 1) * d.chunk});
    const int64_t S = t1 - t0;
    GatherBC(a, b, t0, S, s.Bc, s.Cc);
    for (int64_t i = 0; i < S; ++i) {  // delta' of the segment: dt[block][step][lane]
      if (t0 + i + kAhead < L) PrefetchRows(a.delta, d, b, first(0), width, t0 + i + kAhead, 1, false);
      const T* row = a.delta + (b * L + t0 + i) * D;
      for (int64_t j = 0; j < nb; ++j) {
        for (int v = 0; v < kLanes; v += kV) {
          const V8 x = LoadLanes(row + first(j) + v, lanes(j) - v) + LoadV(s.bias + j * kLanes + v);
          StoreV(d.softplus ? Softplus(x) : x, s.dt + (j * kSegment + i) * kLanes + v);
        }
      }
    }
    static_assert(kMaxFwdTile <= 32, "one bit of `clamp` per block");
    uint32_t clamp = 0;  // bit j: block j's exps need the range clamp in this segment
    for (int64_t j = 0; j < nb; ++j) {
      if (!ExpInRange(s.dt + j * kSegment * kLanes, S * kLanes, s.Amax[j])) clamp |= 1u << j;
    }
    for (int64_t i = 0; i < S; ++i) {
      if (t0 + i + kAhead < L) {
        PrefetchRows(a.u, d, b, first(0), width, t0 + i + kAhead, 1, false);
        PrefetchRows(z, d, b, first(0), width, t0 + i + kAhead, 1, false);
        PrefetchRows(a.y, d, b, first(0), width, t0 + i + kAhead, 1, true);
      }
      const int64_t row = (b * L + t0 + i) * D;
      const float *Bi = s.Bc + i * N, *Ci = s.Cc + i * N;
      for (int64_t j = 0; j < nb; ++j) {
        const int64_t c0 = row + first(j);
        const float* dt = s.dt + (j * kSegment + i) * kLanes;
        const float* At2 = s.At2 + j * N * kLanes;
        float* h = s.h + j * N * kLanes;
        for (int v = 0; v < kLanes; v += kV) {
          const int count = lanes(j) - v;
          const V8 dtv = LoadV(dt + v), uv = LoadLanes(a.u + c0 + v, count);
          const V8 Dk = LoadV(s.Dk + j * kLanes + v);
          V8 y = BoolSwitch((clamp >> j) & 1u, [&](auto c) FFI_INLINE_LAMBDA {
            return StateStep<decltype(c)::value>(N, dtv, uv, Dk, Bi, Ci, At2 + v, h + v);
          });
          if (z != nullptr) {
            const V8 zv = LoadLanes(z + c0 + v, count);
            y = y * zv * Sigmoid(zv);
          }
          StoreLanes(y, a.y + c0 + v, count);
        }
      }
    }
    t0 = t1;
  }
  if (L == 0) save(a.chunk_states + b * d.nchunks * D * N);
  save(a.last_state + b * D * N);
}

FFI_ISA_VARIANTS(FwdTask, FwdTaskBody, (const FwdArgs<T>& a, int64_t task, int64_t tile, FwdScratch& s),
                 (a, task, tile, s))

}  // namespace

template <typename T>
ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a) {
  const ScanDims& d = a.d;
  const int64_t nblocks = (d.channels + kLanes - 1) / kLanes;
  if (d.batch * nblocks == 0) return ffi::Error::Success();
  const int64_t tile = Tile(d, cpu_parallel::NumWorkers(pool, d.batch * nblocks), kMaxFwdTile);
  const int64_t tasks = d.batch * ((nblocks + tile - 1) / tile);
  const int workers = cpu_parallel::NumWorkers(pool, tasks);
  std::vector<FwdScratch> scratch;
  for (int w = 0; w < workers; ++w) scratch.emplace_back(tile, d.state);
  const auto body = FFI_ISA_PICK(FwdTask, T);
  cpu_parallel::ParallelFor(pool, tasks, workers, [&](int64_t task, int w) { body(a, task, tile, scratch[w]); });
  return ffi::Error::Success();
}

template ffi::Error FwdImpl<float>(ffi::ThreadPool&, const FwdArgs<float>&);
template ffi::Error FwdImpl<Bf16>(ffi::ThreadPool&, const FwdArgs<Bf16>&);

}  // namespace selective_scan::cpu
