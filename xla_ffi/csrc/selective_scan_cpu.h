// CPU selective scan (Mamba semantics): what the forward (selective_scan_cpu_fwd.cc) and
// backward (selective_scan_cpu_bwd.cc) files share; selective_scan_cpu.cc holds the handlers.
//
// Layout is channels-last, so a block of kLanes consecutive channels is contiguous in
// memory: the SIMD lanes run over a block's channels, with the state dimension an inner
// loop over arrays of N lane-vectors (h[n][lane], exp(delta*A)[n][lane]): no horizontal
// sums in the forward pass, loads of u, delta, z and y are contiguous, and any N (1 .. 256)
// vectorises the same way. The forward is bound by its N * L * D exponentials: they use a
// range-reduced exp2 polynomial on 8-lane vectors (GCC vector extensions), skip the range
// clamp when a segment's |delta' A| is known to be small, and each forward task walks time
// over a range of channel blocks, reading contiguous rows straight from the operands with
// software prefetch a few steps ahead (see FwdTaskBody).
// Layers: vectorisable math (cpu_simd.h) -> per-task compute (template over the storage type T,
// compiled for AVX2+FMA and for the x86-64 baseline, picked at run time; cpu_parallel.h) ->
// typed Impl<T> (threading, reductions) -> dtype dispatch -> XLA_FFI_DEFINE_HANDLER_SYMBOL.
//
// Backward: for each chunk, in reverse, recompute the chunk's states from the saved
// chunk-boundary state (the forward recurrence, saving every state and exp), then walk the
// chunk backwards. A backward task takes a range of channel blocks and prefetches the next
// block's rows while one computes. Per-worker partial buffers make the reductions of dA, dD,
// ddelta_bias (over batch and time) and dB, dC (over channels) race-free; the lane sums of
// dB and dC reduce eight state indices per vector (Sum8).
#ifndef XLA_FFI_CSRC_SELECTIVE_SCAN_CPU_H_
#define XLA_FFI_CSRC_SELECTIVE_SCAN_CPU_H_

#include <algorithm>
#include <cstdint>

#include "cpu_parallel.h"
#include "cpu_simd.h"
#include "selective_scan_common.h"

namespace selective_scan::cpu {

using namespace cpu_simd;  // NOLINT(build/namespaces): the kernels are written in its vocabulary

constexpr int kLanes = 16;          // channels per task block (the SIMD axis)
constexpr int64_t kSegment = 32;    // forward steps whose delta' is computed ahead at a time
constexpr int64_t kMaxFwdTile = 8;  // channel blocks per forward task, at most (their state stays in L1)
constexpr int64_t kAhead = 8;       // forward rows are prefetched this many steps ahead

// True when every exponent delta' A log2(e) of a segment is known to lie within the range
// of Exp2Unclamped (NaN inputs fail the test and take the clamped path).
FFI_INLINE bool ExpInRange(const float* dt, int64_t count, float amax) {
  return MaxAbs(dt, count) * amax <= 125.0f;
}

// ---------------------------------------------------------------------------------------
// Operands of one call, as raw pointers (T = float or Bf16 storage).

template <typename T>
struct FwdArgs {
  ScanDims d;
  const T *u, *delta, *Bm, *Cm, *z;
  const float *A, *Dskip, *delta_bias;
  T* y;
  float* last_state;
  float* chunk_states;
};

template <typename T>
struct BwdArgs {
  FwdArgs<T> f;  // the forward operands (its output pointers are unused)
  const float* chunk_states;
  const T* dy;
  const float* dlast;
  T *du, *ddelta, *dz;
};

// Per-worker reduction targets of the backward pass (worker 0 writes to the outputs).
struct BwdPartials {
  float *dA, *dB, *dC, *dD, *dbias;
};

// Loads one block's constants, pad lanes 0: A log2(e) (and A itself when `At` is given)
// transposed to [n][lane], D skip, delta bias.
FFI_INLINE void LoadBlockConstants(const ScanDims& d, const float* A, const float* Dskip,
                                  const float* delta_bias, int64_t d0, int cb, float* At, float* At2,
                                  float* Dk, float* bias) {
  const int64_t N = d.state;
  for (int64_t n = 0; n < N; ++n) {
    for (int c = 0; c < kLanes; ++c) {
      const float an = c < cb ? A[(d0 + c) * N + n] : 0.0f;
      if (At != nullptr) At[n * kLanes + c] = an;
      At2[n * kLanes + c] = an * kLog2e;
    }
  }
  for (int c = 0; c < kLanes; ++c) {
    Dk[c] = c < cb ? Dskip[d0 + c] : 0.0f;
    bias[c] = c < cb ? delta_bias[d0 + c] : 0.0f;
  }
}

// Loads cb <= kLanes values as float32, zero-filling the pad lanes.
template <typename T>
FFI_INLINE void GatherRow(const T* __restrict src, int cb, float* __restrict dst) {
  if (cb == kLanes) {
    for (int c = 0; c < kLanes; ++c) dst[c] = ToF32(src[c]);
  } else {
    for (int c = 0; c < kLanes; ++c) dst[c] = c < cb ? ToF32(src[c]) : 0.0f;
  }
}

// Converts rows [t0, t0 + S) of B and C of batch b to f32 [S][N] scratch.
template <typename T>
FFI_INLINE void GatherBC(const FwdArgs<T>& a, int64_t b, int64_t t0, int64_t S, float* Bc, float* Cc) {
  const int64_t N = a.d.state, base = (b * a.d.length + t0) * N;
  for (int64_t k = 0; k < S * N; ++k) {
    Bc[k] = ToF32(a.Bm[base + k]);
    Cc[k] = ToF32(a.Cm[base + k]);
  }
}

// Gathers steps [t0, t0 + S) of a (batch, channel block) into the backward scratch: u,
// delta' (and its softplus derivative), z, B, C and dy. Pad lanes read as zero.

// prefetcher's reach).
template <typename T>
FFI_INLINE void PrefetchRows(const T* base, const ScanDims& d, int64_t b, int64_t d0, int64_t width,
                            int64_t t0, int64_t S, bool for_write) {
  if (base == nullptr) return;
  const int64_t bytes = width * int64_t(sizeof(T));
  for (int64_t i = 0; i < S; ++i) {
    const char* row = reinterpret_cast<const char*>(base + (b * d.length + t0 + i) * d.channels + d0);
    for (int64_t off = 0; off < bytes + 63; off += 64) {
      const char* line = row + std::min(off, bytes - 1);  // the last line once, even if unaligned
      if (for_write) {
        __builtin_prefetch(line, 1);
      } else {
        __builtin_prefetch(line, 0);
      }
    }
  }
}

// Copies a [channels, state] slice of a state tensor into h[n][lane] (pad lanes 0), or back.
FFI_INLINE void LoadState(const float* src, int64_t N, int cb, float* h) {
  for (int64_t n = 0; n < N; ++n) {
    for (int c = 0; c < kLanes; ++c) h[n * kLanes + c] = c < cb ? src[c * N + n] : 0.0f;
  }
}
FFI_INLINE void SaveState(const float* h, int64_t N, int cb, float* dst) {
  for (int c = 0; c < cb; ++c) {
    for (int64_t n = 0; n < N; ++n) dst[c * N + n] = h[n * kLanes + c];
  }
}

// One kV-lane vector's step of the recurrence over the N states: h[n] = exp(delta' A[n]) h[n] +
// delta' u B[n]; returns D u + sum_n C[n] h[n] (y before the gate). At2 (A log2(e)) and h are
// [N][kLanes] arrays offset to the vector's lanes; delta', delta' u, two accumulators (halving
// the chain of the sum over n) and the exp constants stay in registers. kClamp = false when
// |delta' A log2(e)| <= 125 is known. kSave (the backward pass's recomputation): every
// exp(delta' A[n]) also goes to as[n] and every new h[n] to hs[n] (same layout as h).
template <bool kClamp, bool kSave = false>
FFI_INLINE V8 StateStep(int64_t N, V8 dt, V8 u, V8 Dk, const float* __restrict Bi, const float* __restrict Ci,
                       const float* __restrict At2, float* __restrict h, float* __restrict as = nullptr,
                       float* __restrict hs = nullptr) {
  const V8 dbu = dt * u;
  V8 acc0 = Dk * u, acc1 = V8{};
  auto step = [&](int64_t n, V8& acc) FFI_INLINE_LAMBDA {
    const int64_t o = n * kLanes;
    const V8 t = dt * LoadV(At2 + o);
    const V8 a = kClamp ? Exp2(t) : Exp2Unclamped(t);
    const V8 hv = a * LoadV(h + o) + dbu * Bi[n];
    StoreV(hv, h + o);
    acc += Ci[n] * hv;
    if (kSave) {
      StoreV(a, as + o);
      StoreV(hv, hs + o);
    }
  };
  int64_t n = 0;
  for (; n + 1 < N; n += 2) {
    step(n, acc0);
    step(n + 1, acc1);
  }
  if (n < N) step(n, acc0);
  return acc0 + acc1;
}

// Channel blocks per task (forward and backward): as many as leave every worker about
// kTasksPerWorker tasks, at most max_blocks. Dynamic scheduling evens out a loaded machine and
// a pool thread that starts late; 8 rather than 4 tasks a worker halves the tail one worker
// may finish alone (at 1,512,768,16: 3 blocks a task, forward median 2.3-2.5 vs 2.5-3.1 ms).
inline int64_t Tile(const ScanDims& d, int workers, int64_t max_blocks) {
  constexpr int64_t kTasksPerWorker = 8;
  const int64_t nblocks = (d.channels + kLanes - 1) / kLanes;
  return std::clamp<int64_t>(d.batch * nblocks / (kTasksPerWorker * workers), 1, std::min(nblocks, max_blocks));
}

// The forward and backward passes over a whole call (selective_scan_cpu_fwd.cc, _bwd.cc),
// instantiated for T = float and Bf16.
template <typename T>
ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a);
template <typename T>
ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a, const BwdPartials& out);

}  // namespace selective_scan::cpu

#endif  // XLA_FFI_CSRC_SELECTIVE_SCAN_CPU_H_
