// CPU selective scan (Mamba semantics) as XLA FFI handlers: SelectiveScanFwdCpu and
// SelectiveScanBwdCpu. See the FFI contract in xla_ffi/ffi.py.
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
// Layers: vectorisable math -> per-task compute (template over the storage type T, compiled
// for AVX2+FMA and for the x86-64 baseline, picked at run time) -> typed Impl<T> (threading,
// reductions) -> dtype dispatch -> XLA_FFI_DEFINE_HANDLER_SYMBOL.
//
// Backward: for each chunk, in reverse, recompute the chunk's states from the saved
// chunk-boundary state (the forward recurrence, saving every state and exp), then walk the
// chunk backwards. A backward task takes a range of channel blocks and prefetches the next
// block's rows while one computes. Per-worker partial buffers make the reductions of dA, dD,
// ddelta_bias (over batch and time) and dB, dC (over channels) race-free; the lane sums of
// dB and dC reduce eight state indices per vector (Sum8).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <thread>
#include <vector>

#include "selective_scan_common.h"

#define SS_INLINE inline __attribute__((always_inline))
#define SS_INLINE_LAMBDA __attribute__((always_inline))

namespace selective_scan {
namespace {

constexpr int kLanes = 16;          // channels per task block (the SIMD axis)
constexpr int64_t kSegment = 32;    // forward steps whose delta' is computed ahead at a time
constexpr int64_t kMaxFwdTile = 8;  // channel blocks per forward task, at most (their state stays in L1)
constexpr int64_t kAhead = 8;       // forward rows are prefetched this many steps ahead
using Bf16 = uint16_t;              // bfloat16 storage bits

// ---------------------------------------------------------------------------------------
// Vectorisable scalar math (the compiler turns the fixed-trip lane loops into SIMD).

SS_INLINE float ToF32(float x) { return x; }
SS_INLINE float ToF32(Bf16 b) {
  const uint32_t v = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
SS_INLINE void Store(float x, float* p) { *p = x; }
SS_INLINE void Store(float x, Bf16* p) {  // round to nearest even; NaN stays NaN
  uint32_t v;
  std::memcpy(&v, &x, 4);
  const uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
  *p = Bf16((v & 0x7fffffffu) > 0x7f800000u ? ((v >> 16) | 0x40u) : rounded);
}

// Eight float32 lanes as a GCC vector: one AVX2 register in the AVX2+FMA variants, two SSE
// registers in the baseline ones. Loads and stores go through memcpy (any alignment). The
// helpers are always inlined, so the ABI of passing such vectors (-Wpsabi) never applies.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float V8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
constexpr int kV = 8;

SS_INLINE V8 LoadV(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SS_INLINE void StoreV(V8 v, float* p) { std::memcpy(p, &v, sizeof v); }
SS_INLINE V8 Splat(float x) { return V8{} + x; }

// Bit views of float32 (scalar or vector) values, for the exponent arithmetic in Exp2.
SS_INLINE uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
SS_INLINE float FromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
SS_INLINE U8 Bits(V8 x) { return (U8)x; }  // vector casts keep the bits
SS_INLINE V8 FromBits(U8 b) { return (V8)b; }
SS_INLINE float Clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
SS_INLINE V8 Clamp(V8 x, float lo, float hi) {  // maxps/minps; NaN becomes lo
  const V8 l = Splat(lo), h = Splat(hi);
  x = x > l ? x : l;
  return x < h ? x : h;
}

// 2^t for a float or a V8, for |t| <= 125 (callers that cannot bound t use Exp2). round(t)
// comes from the low mantissa bits of t + 1.5 * 2^23 and is added straight into the exponent
// field of the polynomial's value (no multiply); 2^f on [-0.5, 0.5] is a degree-5 minimax
// polynomial (max relative error 1.9e-7 evaluated in float32).
template <typename F>
SS_INLINE F Exp2Unclamped(F t) {
  const F kk = t + 12582912.0f;  // 1.5 * 2^23
  const F f = t - (kk - 12582912.0f);
  F p = 1.326472422670463e-3f * f + 9.671513244061958e-3f;
  p = p * f + 5.550733756851986e-2f;
  p = p * f + 2.402224207465002e-1f;
  p = p * f + 6.931469775880010e-1f;
  p = p * f + 1.0f;
  return FromBits(Bits(p) + (Bits(kk) << 23));  // p * 2^round(t): the constant's bits shift out
}

// 2^t for any t: clamped to [-125, 127] first.
template <typename F>
SS_INLINE F Exp2(F t) {
  return Exp2Unclamped(Clamp(t, -125.0f, 127.0f));
}

constexpr float kLog2e = 1.44269504088896341f;
template <typename F>
SS_INLINE F Exp(F x) {
  return Exp2(x * kLog2e);
}

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1], for a float or a V8: log1p(e) =
// 2 atanh(s), s = e / (2 + e) in (0, 1/3], from atanh's odd series up to s^13 (truncation
// under 2e-8 relative), so small e loses nothing to cancellation. NaN stays NaN. `grad` (if
// given) receives d softplus / dx = sigmoid(x).
template <typename F>
SS_INLINE F Softplus(F x, F* grad = nullptr) {
  const F neg_abs = x < 0.0f ? x : -x;
  const F e = Exp2Unclamped(Clamp(neg_abs * kLog2e, -125.0f, 0.0f));
  const F s = e / (2.0f + e), s2 = s * s;
  F p = s2 * (2.0f / 13.0f) + 2.0f / 11.0f;
  p = p * s2 + 2.0f / 9.0f;
  p = p * s2 + 2.0f / 7.0f;
  p = p * s2 + 2.0f / 5.0f;
  p = p * s2 + 2.0f / 3.0f;
  p = p * s2 + 2.0f;
  if (grad != nullptr) {
    const F r = 1.0f / (1.0f + e);
    *grad = x < 0.0f ? e * r : r;
  }
  return (x < 0.0f ? F{} : x) + s * p;
}

template <typename F>
SS_INLINE F Sigmoid(F x) {
  return 1.0f / (1.0f + Exp(-x));
}

// The lane sums of eight vectors v[0..7] as one vector (lane k: the sum of v[k]): two rounds
// of pairwise adds within 128-bit halves (vhaddps) and one across them, 7 adds for 8 sums.
SS_INLINE V8 Sum8(const float* v) {
  auto hadd = [](V8 x, V8 y) SS_INLINE_LAMBDA {
    return __builtin_shuffle(x, y, I8{0, 2, 8, 10, 4, 6, 12, 14}) +
           __builtin_shuffle(x, y, I8{1, 3, 9, 11, 5, 7, 13, 15});
  };
  const V8 a = hadd(LoadV(v), LoadV(v + kV)), b = hadd(LoadV(v + 2 * kV), LoadV(v + 3 * kV));
  const V8 c = hadd(LoadV(v + 4 * kV), LoadV(v + 5 * kV)), e = hadd(LoadV(v + 6 * kV), LoadV(v + 7 * kV));
  const V8 ab = hadd(a, b), ce = hadd(c, e);  // lanes: sums of halves 0-3 low, 0-3 high, ...
  return __builtin_shuffle(ab, ce, I8{0, 1, 2, 3, 8, 9, 10, 11}) +
         __builtin_shuffle(ab, ce, I8{4, 5, 6, 7, 12, 13, 14, 15});
}

// Largest |x| of `count` floats (a multiple of kV); NaN never raises it.
SS_INLINE float MaxAbs(const float* x, int64_t count) {
  V8 m = V8{};
  for (int64_t k = 0; k < count; k += kV) {
    const V8 v = LoadV(x + k), av = v < 0.0f ? -v : v;
    m = av > m ? av : m;
  }
  float r = 0.0f;
  for (int c = 0; c < kV; ++c) r = std::max(r, m[c]);
  return r;
}

// True when every exponent delta' A log2(e) of a segment is known to lie within the range
// of Exp2Unclamped (NaN inputs fail the test and take the clamped path).
SS_INLINE bool ExpInRange(const float* dt, int64_t count, float amax) {
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

// One zeroed float buffer handed out in consecutive slices (the scratch structs below carve
// their arrays from it). Moving it keeps the buffer, so slices stay valid.
class FloatArena {
 public:
  explicit FloatArena(size_t floats) : storage_(floats, 0.0f), next_(storage_.data()) {}
  FloatArena(const FloatArena&) = delete;
  FloatArena(FloatArena&&) = default;
  float* Take(int64_t n) {
    float* slice = next_;
    next_ += n;
    return slice;
  }

 private:
  std::vector<float> storage_;
  float* next_;
};

// Scratch of one backward worker, sized once per call: `steps` time steps of a channel block
// and their state history.
struct Scratch {
  Scratch(int64_t steps, int64_t state)
      : arena(size_t(steps * kLanes * 9 + steps * state * 2 + state * kLanes * 5 + kLanes * 4 +
                     (2 * steps + 1) * state * kLanes + 2 * RoundUp8(state) * kV)) {
    dt = arena.Take(steps * kLanes);
    dsp = arena.Take(steps * kLanes);
    u = arena.Take(steps * kLanes);
    z = arena.Take(steps * kLanes);
    out = arena.Take(steps * kLanes);  // y (forward) or dy (backward)
    ypre = arena.Take(steps * kLanes);
    du = arena.Take(steps * kLanes);
    ddt = arena.Take(steps * kLanes);
    dz = arena.Take(steps * kLanes);
    Bc = arena.Take(steps * state);
    Cc = arena.Take(steps * state);
    h = arena.Take(state * kLanes);
    hrun = arena.Take(state * kLanes);
    At = arena.Take(state * kLanes);
    At2 = arena.Take(state * kLanes);
    dA = arena.Take(state * kLanes);
    Dk = arena.Take(kLanes);
    bias = arena.Take(kLanes);
    dD = arena.Take(kLanes);
    dbias = arena.Take(kLanes);
    hs = arena.Take((steps + 1) * state * kLanes);
    as = arena.Take(steps * state * kLanes);
    pB = arena.Take(RoundUp8(state) * kV);  // pad rows stay zero
    pC = arena.Take(RoundUp8(state) * kV);
  }
  static int64_t RoundUp8(int64_t n) { return (n + 7) / 8 * 8; }
  FloatArena arena;
  float *dt, *dsp, *u, *z, *out, *ypre, *du, *ddt, *dz, *Bc, *Cc, *h, *hrun, *At, *At2, *dA, *Dk, *bias, *dD,
      *dbias, *hs, *as, *pB, *pC;
};

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

// Loads one block's constants, pad lanes 0: A log2(e) (and A itself when `At` is given)
// transposed to [n][lane], D skip, delta bias.
SS_INLINE void LoadBlockConstants(const ScanDims& d, const float* A, const float* Dskip,
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
SS_INLINE void GatherRow(const T* __restrict src, int cb, float* __restrict dst) {
  if (cb == kLanes) {
    for (int c = 0; c < kLanes; ++c) dst[c] = ToF32(src[c]);
  } else {
    for (int c = 0; c < kLanes; ++c) dst[c] = c < cb ? ToF32(src[c]) : 0.0f;
  }
}

// The first `count` values at p (any count; none for count <= 0) as one float32 vector, zero
// past `count`.
template <typename T>
SS_INLINE V8 LoadLanes(const T* __restrict p, int count) {
  if constexpr (std::is_same_v<T, float>) {
    if (count >= kV) return LoadV(p);
  }
  V8 v = V8{};
  if (count >= kV) {
    for (int c = 0; c < kV; ++c) v[c] = ToF32(p[c]);
  } else {
    for (int c = 0; c < count; ++c) v[c] = ToF32(p[c]);
  }
  return v;
}

// Stores the first min(count, kV) lanes of v to p.
template <typename T>
SS_INLINE void StoreLanes(V8 v, T* __restrict p, int count) {
  if constexpr (std::is_same_v<T, float>) {
    if (count >= kV) return StoreV(v, p);
  }
  for (int c = 0; c < std::min(count, kV); ++c) Store(v[c], p + c);
}

// Converts rows [t0, t0 + S) of B and C of batch b to f32 [S][N] scratch.
template <typename T>
SS_INLINE void GatherBC(const FwdArgs<T>& a, int64_t b, int64_t t0, int64_t S, float* Bc, float* Cc) {
  const int64_t N = a.d.state, base = (b * a.d.length + t0) * N;
  for (int64_t k = 0; k < S * N; ++k) {
    Bc[k] = ToF32(a.Bm[base + k]);
    Cc[k] = ToF32(a.Cm[base + k]);
  }
}

// Gathers steps [t0, t0 + S) of a (batch, channel block) into the backward scratch: u,
// delta' (and its softplus derivative), z, B, C and dy. Pad lanes read as zero.
template <typename T>
SS_INLINE void Gather(const FwdArgs<T>& a, const T* dy, int64_t b, int64_t d0, int cb, int64_t t0,
                      int64_t S, Scratch& s) {
  const ScanDims& d = a.d;
  for (int64_t i = 0; i < S; ++i) {
    const int64_t row = (b * d.length + t0 + i) * d.channels + d0;
    GatherRow(a.u + row, cb, s.u + i * kLanes);
    GatherRow(a.delta + row, cb, s.dt + i * kLanes);
    for (int c = 0; c < kLanes; ++c) s.dt[i * kLanes + c] += s.bias[c];
    if (d.has_z) GatherRow(a.z + row, cb, s.z + i * kLanes);
    GatherRow(dy + row, cb, s.out + i * kLanes);
  }
  if (d.softplus) {
    for (int64_t k = 0; k < S * kLanes; k += kV) {
      V8 grad;
      StoreV(Softplus(LoadV(s.dt + k), &grad), s.dt + k);
      StoreV(grad, s.dsp + k);
    }
  } else {
    for (int64_t k = 0; k < S * kLanes; ++k) s.dsp[k] = 1.0f;
  }
  GatherBC(a, b, t0, S, s.Bc, s.Cc);
}

// Prefetches channels [d0, d0 + width) of rows [t0, t0 + S) of a [batch, length, channels]
// tensor: the rows are a channels-stride apart (often across pages, out of the hardware
// prefetcher's reach).
template <typename T>
SS_INLINE void PrefetchRows(const T* base, const ScanDims& d, int64_t b, int64_t d0, int64_t width,
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

// Writes S rows of kLanes f32 values to a [batch, length, channels] output (cb real lanes).
template <typename T>
SS_INLINE void Scatter(const float* src, T* dst, const ScanDims& d, int64_t b, int64_t d0, int cb,
                       int64_t t0, int64_t S) {
  for (int64_t i = 0; i < S; ++i) {
    T* row = dst + (b * d.length + t0 + i) * d.channels + d0;
    for (int c = 0; c < cb; ++c) Store(src[i * kLanes + c], row + c);
  }
}

// Copies a [channels, state] slice of a state tensor into h[n][lane] (pad lanes 0), or back.
SS_INLINE void LoadState(const float* src, int64_t N, int cb, float* h) {
  for (int64_t n = 0; n < N; ++n) {
    for (int c = 0; c < kLanes; ++c) h[n * kLanes + c] = c < cb ? src[c * N + n] : 0.0f;
  }
}
SS_INLINE void SaveState(const float* h, int64_t N, int cb, float* dst) {
  for (int c = 0; c < cb; ++c) {
    for (int64_t n = 0; n < N; ++n) dst[c * N + n] = h[n * kLanes + c];
  }
}

// f(std::true_type{}) when `clamp`, else f(std::false_type{}): one call site for the two
// instantiations of a step templated on kClamp.
template <typename F>
SS_INLINE auto WithClamp(bool clamp, F&& f) {
  return clamp ? f(std::true_type{}) : f(std::false_type{});
}

// One kV-lane vector's step of the recurrence over the N states: h[n] = exp(delta' A[n]) h[n] +
// delta' u B[n]; returns D u + sum_n C[n] h[n] (y before the gate). At2 (A log2(e)) and h are
// [N][kLanes] arrays offset to the vector's lanes; delta', delta' u, two accumulators (halving
// the chain of the sum over n) and the exp constants stay in registers. kClamp = false when
// |delta' A log2(e)| <= 125 is known. kSave (the backward pass's recomputation): every
// exp(delta' A[n]) also goes to as[n] and every new h[n] to hs[n] (same layout as h).
template <bool kClamp, bool kSave = false>
SS_INLINE V8 StateStep(int64_t N, V8 dt, V8 u, V8 Dk, const float* __restrict Bi, const float* __restrict Ci,
                       const float* __restrict At2, float* __restrict h, float* __restrict as = nullptr,
                       float* __restrict hs = nullptr) {
  const V8 dbu = dt * u;
  V8 acc0 = Dk * u, acc1 = V8{};
  auto step = [&](int64_t n, V8& acc) SS_INLINE_LAMBDA {
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

// S steps of one channel block from [S][kLanes] scratch (the backward pass's recomputation):
// advances h[n][lane], writes y before the gate into `ypre`, every state h_i to hs[i + 1] and
// every exp(delta_i A) to as[i] ([S][N][kLanes]).
template <bool kClamp>
SS_INLINE void RecomputeSteps(int64_t S, int64_t N, const float* __restrict dt, const float* __restrict u,
                              const float* __restrict Bc, const float* __restrict Cc,
                              const float* __restrict At2, const float* __restrict Dk, float* __restrict h,
                              float* __restrict ypre, float* __restrict hs, float* __restrict as) {
  for (int64_t i = 0; i < S; ++i) {
    for (int v = 0; v < kLanes; v += kV) {
      const int64_t k = i * kLanes + v;
      StoreV(StateStep<kClamp, true>(N, LoadV(dt + k), LoadV(u + k), LoadV(Dk + v), Bc + i * N, Cc + i * N,
                                     At2 + v, h + v, as + i * N * kLanes + v, hs + (i + 1) * N * kLanes + v),
             ypre + k);
    }
  }
}

// One reverse step of the backward pass for a channel block. hs points at h_{t-1} (h_t
// follows N lane-vectors later), `as` at exp(delta_t A); dh carries dL/dh_t from later steps
// and leaves as dL/dh_{t-1}. Accumulates dA, ddelta_bias; adds this step's dB, dC row. With
// g = dL/dh_t and q = g a_t h_{t-1}: dA += delta' q, ddelta' = sum_n (A q + g B u), du = dy D +
// delta' sum_n g B, so the two sums over n are all a lane carries. pB, pC ([N rounded up to
// 8][kV], pad rows zero) hold each n's two half-block vectors added; Sum8 reduces 8 n at once.
SS_INLINE void BackwardStep(int64_t N, const float* __restrict Bt, const float* __restrict Ct,
                            const float* __restrict hs, const float* __restrict as,
                            const float* __restrict At, const float* __restrict ut,
                            const float* __restrict dtt, const float* __restrict dyt,
                            const float* __restrict dspt, const float* __restrict Dk,
                            float* __restrict dh, float* __restrict dA, float* __restrict dbias,
                            float* __restrict pB, float* __restrict pC, float* __restrict dB_row,
                            float* __restrict dC_row, float* __restrict du_out,
                            float* __restrict ddt_out) {
  static_assert(kLanes == 2 * kV, "a channel block is two vectors");
  const V8 dy0 = LoadV(dyt), dy1 = LoadV(dyt + kV), dt0 = LoadV(dtt), dt1 = LoadV(dtt + kV);
  const V8 dtu0 = dt0 * LoadV(ut), dtu1 = dt1 * LoadV(ut + kV);
  V8 sA0 = V8{}, sA1 = V8{}, gb0 = V8{}, gb1 = V8{};
  for (int64_t n = 0; n < N; ++n) {
    const float bn = Bt[n], cn = Ct[n];
    const int64_t o = n * kLanes;
    const V8 g0 = LoadV(dh + o) + dy0 * cn, g1 = LoadV(dh + o + kV) + dy1 * cn;
    const V8 a0 = LoadV(as + o), a1 = LoadV(as + o + kV);
    const V8 q0 = g0 * a0 * LoadV(hs + o), q1 = g1 * a1 * LoadV(hs + o + kV);
    sA0 += LoadV(At + o) * q0;
    sA1 += LoadV(At + o + kV) * q1;
    gb0 += g0 * bn;
    gb1 += g1 * bn;
    StoreV(LoadV(dA + o) + dt0 * q0, dA + o);
    StoreV(LoadV(dA + o + kV) + dt1 * q1, dA + o + kV);
    StoreV(a0 * g0, dh + o);  // dL/dh_{t-1} through h_t = a_t h_{t-1} + ...
    StoreV(a1 * g1, dh + o + kV);
    const float* hn = hs + N * kLanes + o;
    StoreV(dy0 * LoadV(hn) + dy1 * LoadV(hn + kV), pC + n * kV);
    StoreV(g0 * dtu0 + g1 * dtu1, pB + n * kV);
  }
  for (int64_t n0 = 0; n0 < N; n0 += 8) {
    const int m = int(std::min<int64_t>(8, N - n0));
    const V8 sb = Sum8(pB + n0 * kV), sc = Sum8(pC + n0 * kV);
    for (int k = 0; k < m; ++k) {
      dB_row[n0 + k] += sb[k];
      dC_row[n0 + k] += sc[k];
    }
  }
  const V8 ddt0 = (sA0 + LoadV(ut) * gb0) * LoadV(dspt), ddt1 = (sA1 + LoadV(ut + kV) * gb1) * LoadV(dspt + kV);
  StoreV(LoadV(dbias) + ddt0, dbias);
  StoreV(LoadV(dbias + kV) + ddt1, dbias + kV);
  StoreV(ddt0, ddt_out);
  StoreV(ddt1, ddt_out + kV);
  StoreV(dy0 * LoadV(Dk) + dt0 * gb0, du_out);
  StoreV(dy1 * LoadV(Dk + kV) + dt1 * gb1, du_out + kV);
}

// ---------------------------------------------------------------------------------------
// Per-task compute.

// Forward for one (batch, range of `tile` channel blocks): y, last state, chunk-boundary
// states. Time is the outer loop and the range's blocks the inner one, so each step reads one
// contiguous row of u, delta and z and writes one of y (tile * kLanes channels, a fixed stride
// apart from step to step: a pattern the hardware prefetcher follows), with every block's
// state and constants in scratch. Per segment of kSegment steps, delta' (bias, softplus) is
// computed first, which tells whether the segment's exps need the range clamp.
template <typename T>
SS_INLINE void FwdTaskBody(const FwdArgs<T>& a, int64_t task, int64_t tile, FwdScratch& s) {
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
          V8 y = WithClamp((clamp >> j) & 1u, [&](auto c) SS_INLINE_LAMBDA {
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

// Prefetches the backward inputs (u, delta, dy, z) of steps [t0, t0 + S) of a channel block.
template <typename T>
SS_INLINE void PrefetchBwdInputs(const BwdArgs<T>& a, int64_t b, int64_t d0, int64_t t0, int64_t S) {
  const ScanDims& d = a.f.d;
  PrefetchRows(a.f.u, d, b, d0, kLanes, t0, S, false);
  PrefetchRows(a.f.delta, d, b, d0, kLanes, t0, S, false);
  PrefetchRows(a.dy, d, b, d0, kLanes, t0, S, false);
  PrefetchRows(d.has_z ? a.f.z : nullptr, d, b, d0, kLanes, t0, S, false);
}

// Backward for one (batch, channel block starting at channel d0), chunks in reverse;
// reductions into `p`. next_d0 (or -1): the block the task does next, whose last chunk's rows
// are prefetched while this block computes.
template <typename T>
SS_INLINE void BwdBlock(const BwdArgs<T>& a, int64_t b, int64_t d0, int64_t next_d0, Scratch& s,
                        const BwdPartials& p) {
  const ScanDims& d = a.f.d;
  const int cb = int(std::min<int64_t>(kLanes, d.channels - d0));
  const int64_t L = d.length, D = d.channels, N = d.state;
  LoadBlockConstants(d, a.f.A, a.f.Dskip, a.f.delta_bias, d0, cb, s.At, s.At2, s.Dk, s.bias);
  const float amax = MaxAbs(s.At2, N * kLanes);
  std::fill(s.dA, s.dA + N * kLanes, 0.0f);
  std::fill(s.dD, s.dD + kLanes, 0.0f);
  std::fill(s.dbias, s.dbias + kLanes, 0.0f);
  float* dh = s.h;  // the carried state gradient dL/dh_t (from later steps)
  LoadState(a.dlast + (b * D + d0) * N, N, cb, dh);
  for (int64_t k = (L + d.chunk - 1) / d.chunk - 1; k >= 0; --k) {
    const int64_t t0 = k * d.chunk, S = std::min(L, t0 + d.chunk) - t0;
    Gather<T>(a.f, a.dy, b, d0, cb, t0, S, s);
    // The rows needed next: the previous chunk's, or after the first chunk the next block's
    // last chunk (none after the task's last block). They are prefetched a few per reverse
    // step below, so the prefetches never queue up at once.
    const int64_t next_t0 = k > 0 ? t0 - d.chunk : (L - 1) / d.chunk * d.chunk;
    const int64_t next_rows = k > 0 ? d.chunk : (next_d0 >= 0 ? L - next_t0 : 0);
    const int64_t prefetch_d0 = k > 0 ? d0 : next_d0;
    // Recompute the chunk's states forward from its saved initial state (hs[0]).
    LoadState(a.chunk_states + ((b * d.nchunks + k) * D + d0) * N, N, cb, s.hs);
    std::copy(s.hs, s.hs + N * kLanes, s.hrun);
    WithClamp(!ExpInRange(s.dt, S * kLanes, amax), [&](auto c) SS_INLINE_LAMBDA {
      RecomputeSteps<decltype(c)::value>(S, N, s.dt, s.u, s.Bc, s.Cc, s.At2, s.Dk, s.hrun, s.ypre, s.hs, s.as);
    });
    // Gate and D-skip terms of the whole chunk; s.out becomes dL/dy (pre-gate).
    if (d.has_z) {
      for (int64_t k = 0; k < S * kLanes; k += kV) {
        const V8 zc = LoadV(s.z + k), sg = Sigmoid(zc), dout = LoadV(s.out + k);
        StoreV(dout * zc * sg, s.out + k);
        StoreV(dout * LoadV(s.ypre + k) * sg * (1.0f + zc * (1.0f - sg)), s.dz + k);
      }
    }
    for (int64_t i = 0; i < S; ++i) {
      for (int c = 0; c < kLanes; ++c) s.dD[c] += s.out[i * kLanes + c] * s.u[i * kLanes + c];
    }
    for (int64_t i = S - 1, prefetched = 0; i >= 0; --i) {
      const int64_t upto = (S - i) * next_rows / S;
      if (upto > prefetched) PrefetchBwdInputs(a, b, prefetch_d0, next_t0 + prefetched, upto - prefetched);
      prefetched = upto;
      PrefetchRows(a.du, d, b, d0, cb, t0 + i, 1, true);  // this step's rows of the outputs
      PrefetchRows(a.ddelta, d, b, d0, cb, t0 + i, 1, true);
      PrefetchRows(d.has_z ? a.dz : nullptr, d, b, d0, cb, t0 + i, 1, true);
      BackwardStep(N, s.Bc + i * N, s.Cc + i * N, s.hs + i * N * kLanes, s.as + i * N * kLanes, s.At,
                   s.u + i * kLanes, s.dt + i * kLanes, s.out + i * kLanes, s.dsp + i * kLanes, s.Dk, dh,
                   s.dA, s.dbias, s.pB, s.pC, p.dB + (b * L + t0 + i) * N, p.dC + (b * L + t0 + i) * N,
                   s.du + i * kLanes, s.ddt + i * kLanes);
    }
    Scatter<T>(s.du, a.du, d, b, d0, cb, t0, S);
    Scatter<T>(s.ddt, a.ddelta, d, b, d0, cb, t0, S);
    if (d.has_z) Scatter<T>(s.dz, a.dz, d, b, d0, cb, t0, S);
  }
  for (int c = 0; c < cb; ++c) {
    for (int64_t n = 0; n < N; ++n) p.dA[(d0 + c) * N + n] += s.dA[n * kLanes + c];
    p.dD[d0 + c] += s.dD[c];
    p.dbias[d0 + c] += s.dbias[c];
  }
}

// Backward for one (batch, range of `tile` channel blocks): the blocks one after another,
// each prefetching the next one's rows.
template <typename T>
SS_INLINE void BwdTaskBody(const BwdArgs<T>& a, int64_t task, int64_t tile, Scratch& s, const BwdPartials& p) {
  const int64_t nblocks = (a.f.d.channels + kLanes - 1) / kLanes, ntiles = (nblocks + tile - 1) / tile;
  const int64_t b = task / ntiles, blk0 = (task % ntiles) * tile;
  const int64_t blk1 = std::min(nblocks, blk0 + tile);
  for (int64_t blk = blk0; blk < blk1; ++blk) {
    BwdBlock(a, b, blk * kLanes, blk + 1 < blk1 ? (blk + 1) * kLanes : -1, s, p);
  }
}

// Instruction-set variants of the task bodies, picked once at run time.
template <typename T>
void FwdTaskBase(const FwdArgs<T>& a, int64_t task, int64_t tile, FwdScratch& s) {
  FwdTaskBody<T>(a, task, tile, s);
}
template <typename T>
void BwdTaskBase(const BwdArgs<T>& a, int64_t task, int64_t tile, Scratch& s, const BwdPartials& p) {
  BwdTaskBody<T>(a, task, tile, s, p);
}
#if defined(__x86_64__)
template <typename T>
__attribute__((target("avx2,fma"))) void FwdTaskAvx2(const FwdArgs<T>& a, int64_t task, int64_t tile,
                                                     FwdScratch& s) {
  FwdTaskBody<T>(a, task, tile, s);
}
template <typename T>
__attribute__((target("avx2,fma"))) void BwdTaskAvx2(const BwdArgs<T>& a, int64_t task, int64_t tile,
                                                     Scratch& s, const BwdPartials& p) {
  BwdTaskBody<T>(a, task, tile, s, p);
}
#endif

// True when the AVX2+FMA variants may run (XLA_FFI_CPU_ISA=baseline forces the baseline).
bool UseAvx2() {
  static const bool use = [] {
    const char* env = std::getenv("XLA_FFI_CPU_ISA");
    if (env != nullptr && std::string(env) == "baseline") return false;
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }();
  return use;
}

// ---------------------------------------------------------------------------------------
// Threading: tasks pulled from a shared counter by the caller and up to workers - 1 threads
// of XLA's intra-op pool (std::thread when the pool reports none). The caller waits only
// for claimed tasks, so a pool thread that starts late finds no work and cannot deadlock.

int NumWorkers(ffi::ThreadPool& pool, int64_t tasks) {
  int64_t threads = pool.num_threads();
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return int(std::max<int64_t>(1, std::min(threads, tasks)));
}

void ParallelFor(ffi::ThreadPool& pool, int64_t tasks, int workers,
                 std::function<void(int64_t task, int worker)> fn) {
  struct Shared {
    std::atomic<int64_t> next{0}, done{0};
    int64_t tasks = 0;
    std::function<void(int64_t, int)> fn;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto shared = std::make_shared<Shared>();
  shared->tasks = tasks;
  shared->fn = std::move(fn);
  auto work = [](Shared& sh, int worker) {
    int64_t finished = 0;
    for (int64_t i; (i = sh.next.fetch_add(1)) < sh.tasks; ++finished) sh.fn(i, worker);
    if (finished > 0 && sh.done.fetch_add(finished) + finished == sh.tasks) {
      std::lock_guard<std::mutex> lock(sh.mu);
      sh.cv.notify_all();
    }
  };
  const bool have_pool = pool.num_threads() > 0;
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) {
    if (have_pool) {
      pool.Schedule([shared, w, work] { work(*shared, w); });
    } else {
      threads.emplace_back([shared, w, work] { work(*shared, w); });
    }
  }
  work(*shared, 0);
  {
    std::unique_lock<std::mutex> lock(shared->mu);
    shared->cv.wait(lock, [&] { return shared->done.load() == shared->tasks; });
  }
  for (auto& t : threads) t.join();
}

// ---------------------------------------------------------------------------------------
// Typed implementations.

// Channel blocks per task (forward and backward): as many as leave every worker about
// kTasksPerWorker tasks, at most max_blocks. Dynamic scheduling evens out a loaded machine and
// a pool thread that starts late; 8 rather than 4 tasks a worker halves the tail one worker
// may finish alone (at 1,512,768,16: 3 blocks a task, forward median 2.3-2.5 vs 2.5-3.1 ms).
int64_t Tile(const ScanDims& d, int workers, int64_t max_blocks) {
  constexpr int64_t kTasksPerWorker = 8;
  const int64_t nblocks = (d.channels + kLanes - 1) / kLanes;
  return std::clamp<int64_t>(d.batch * nblocks / (kTasksPerWorker * workers), 1, std::min(nblocks, max_blocks));
}

template <typename T>
ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a) {
  const ScanDims& d = a.d;
  const int64_t nblocks = (d.channels + kLanes - 1) / kLanes;
  if (d.batch * nblocks == 0) return ffi::Error::Success();
  const int64_t tile = Tile(d, NumWorkers(pool, d.batch * nblocks), kMaxFwdTile);
  const int64_t tasks = d.batch * ((nblocks + tile - 1) / tile);
  const int workers = NumWorkers(pool, tasks);
  std::vector<FwdScratch> scratch;
  for (int w = 0; w < workers; ++w) scratch.emplace_back(tile, d.state);
  const auto body = UseAvx2() ?
#if defined(__x86_64__)
                              &FwdTaskAvx2<T>
#else
                              &FwdTaskBase<T>
#endif
                              : &FwdTaskBase<T>;
  ParallelFor(pool, tasks, workers, [&](int64_t task, int w) { body(a, task, tile, scratch[w]); });
  return ffi::Error::Success();
}

template <typename T>
ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a, const BwdPartials& out) {
  const ScanDims& d = a.f.d;
  const int64_t B = d.batch, L = d.length, D = d.channels, N = d.state;
  std::fill(out.dA, out.dA + D * N, 0.0f);
  std::fill(out.dB, out.dB + B * L * N, 0.0f);
  std::fill(out.dC, out.dC + B * L * N, 0.0f);
  std::fill(out.dD, out.dD + D, 0.0f);
  std::fill(out.dbias, out.dbias + D, 0.0f);
  const int64_t nblocks = (D + kLanes - 1) / kLanes;
  if (B * nblocks == 0 || L == 0) {
    // Nothing to propagate through: du, ddelta, dz are zero.
    std::fill(a.du, a.du + B * L * D, T(0));
    std::fill(a.ddelta, a.ddelta + B * L * D, T(0));
    if (d.has_z) std::fill(a.dz, a.dz + B * L * D, T(0));
    return ffi::Error::Success();
  }
  const int64_t tile = Tile(d, NumWorkers(pool, B * nblocks), nblocks);
  const int64_t tasks = B * ((nblocks + tile - 1) / tile);
  const int workers = NumWorkers(pool, tasks);
  const int64_t steps = std::min(d.chunk, L);
  std::vector<Scratch> scratch;
  for (int w = 0; w < workers; ++w) scratch.emplace_back(steps, N);
  // Worker 0 reduces straight into the outputs; the others into zeroed buffers added after.
  const int64_t part_size = D * N + 2 * B * L * N + 2 * D;
  std::vector<float> extra(size_t(part_size) * size_t(workers - 1), 0.0f);
  std::vector<BwdPartials> parts{out};
  for (int w = 1; w < workers; ++w) {
    float* q = extra.data() + (w - 1) * part_size;
    parts.push_back({q, q + D * N, q + D * N + B * L * N, q + D * N + 2 * B * L * N,
                     q + D * N + 2 * B * L * N + D});
  }
  const auto body = UseAvx2() ?
#if defined(__x86_64__)
                              &BwdTaskAvx2<T>
#else
                              &BwdTaskBase<T>
#endif
                              : &BwdTaskBase<T>;
  ParallelFor(pool, tasks, workers, [&](int64_t task, int w) { body(a, task, tile, scratch[w], parts[w]); });
  for (int w = 1; w < workers; ++w) {
    const float* q = extra.data() + (w - 1) * part_size;
    for (int64_t k = 0; k < D * N; ++k) out.dA[k] += q[k];
    q += D * N;
    for (int64_t k = 0; k < B * L * N; ++k) out.dB[k] += q[k];
    q += B * L * N;
    for (int64_t k = 0; k < B * L * N; ++k) out.dC[k] += q[k];
    q += B * L * N;
    for (int64_t k = 0; k < D; ++k) out.dD[k] += q[k];
    q += D;
    for (int64_t k = 0; k < D; ++k) out.dbias[k] += q[k];
  }
  return ffi::Error::Success();
}

template <typename T>
FwdArgs<T> MakeFwdArgs(const ScanDims& d, const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta,
                       const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                       const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                       const ffi::AnyBuffer& delta_bias) {
  FwdArgs<T> a;
  a.d = d;
  a.u = static_cast<const T*>(u.untyped_data());
  a.delta = static_cast<const T*>(delta.untyped_data());
  a.Bm = static_cast<const T*>(Bm.untyped_data());
  a.Cm = static_cast<const T*>(Cm.untyped_data());
  a.z = static_cast<const T*>(z.untyped_data());
  a.A = static_cast<const float*>(A.untyped_data());
  a.Dskip = static_cast<const float*>(Dskip.untyped_data());
  a.delta_bias = static_cast<const float*>(delta_bias.untyped_data());
  a.y = nullptr;
  a.last_state = nullptr;
  a.chunk_states = nullptr;
  return a;
}

// ---------------------------------------------------------------------------------------
// Dtype dispatch (the handlers' entry points).

constexpr const char* kFwdName = "selective_scan_fwd";
constexpr const char* kBwdName = "selective_scan_bwd";

ffi::Error FwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                       ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                       ffi::AnyBuffer delta_bias, ffi::Result<ffi::AnyBuffer> y,
                       ffi::Result<ffi::AnyBuffer> last_state, ffi::Result<ffi::AnyBuffer> chunk_states,
                       bool softplus, bool has_z, int64_t chunk) {
  ScanDims d;
  if (auto e = CheckForwardOperands(kFwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z,
                                    chunk, &d);
      e.failure()) {
    return e;
  }
  const auto t = u.element_type();
  const auto F32 = ffi::DataType::F32;
  if (auto e = CheckOperand(kFwdName, "y", *y, t, {d.batch, d.length, d.channels}); e.failure()) return e;
  if (auto e = CheckOperand(kFwdName, "last_state", *last_state, F32, {d.batch, d.channels, d.state});
      e.failure()) {
    return e;
  }
  if (auto e = CheckOperand(kFwdName, "chunk_states", *chunk_states, F32,
                            {d.batch, d.nchunks, d.channels, d.state});
      e.failure()) {
    return e;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    FwdArgs<T> a = MakeFwdArgs<T>(d, u, delta, A, Bm, Cm, Dskip, z, delta_bias);
    a.y = static_cast<T*>(y->untyped_data());
    a.last_state = static_cast<float*>(last_state->untyped_data());
    a.chunk_states = static_cast<float*>(chunk_states->untyped_data());
    return FwdImpl<T>(pool, a);
  };
  return t == ffi::DataType::F32 ? run(float{}) : run(Bf16{});
}

ffi::Error BwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                       ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                       ffi::AnyBuffer delta_bias, ffi::AnyBuffer chunk_states, ffi::AnyBuffer dy,
                       ffi::AnyBuffer dlast, ffi::Result<ffi::AnyBuffer> du,
                       ffi::Result<ffi::AnyBuffer> ddelta, ffi::Result<ffi::AnyBuffer> dA,
                       ffi::Result<ffi::AnyBuffer> dB, ffi::Result<ffi::AnyBuffer> dC,
                       ffi::Result<ffi::AnyBuffer> dDskip, ffi::Result<ffi::AnyBuffer> dz,
                       ffi::Result<ffi::AnyBuffer> ddelta_bias, bool softplus, bool has_z, int64_t chunk) {
  ScanDims d;
  if (auto e = CheckForwardOperands(kBwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z,
                                    chunk, &d);
      e.failure()) {
    return e;
  }
  const auto t = u.element_type();
  const auto F32 = ffi::DataType::F32;
  const int64_t B = d.batch, L = d.length, D = d.channels, N = d.state;
  struct Expect {
    const char* name;
    const ffi::AnyBuffer& buf;
    ffi::DataType dtype;
    std::initializer_list<int64_t> shape;
  };
  const Expect expected[] = {
      {"chunk_states", chunk_states, F32, {B, d.nchunks, D, N}},
      {"dy", dy, t, {B, L, D}},
      {"dlast", dlast, F32, {B, D, N}},
      {"du", *du, t, {B, L, D}},
      {"ddelta", *ddelta, t, {B, L, D}},
      {"dA", *dA, F32, {D, N}},
      {"dB", *dB, F32, {B, L, N}},
      {"dC", *dC, F32, {B, L, N}},
      {"dDskip", *dDskip, F32, {D}},
      {"ddelta_bias", *ddelta_bias, F32, {D}},
  };
  for (const Expect& x : expected) {
    if (auto e = CheckOperand(kBwdName, x.name, x.buf, x.dtype, x.shape); e.failure()) return e;
  }
  if (has_z) {
    if (auto e = CheckOperand(kBwdName, "dz", *dz, t, {B, L, D}); e.failure()) return e;
  } else if (auto e = CheckOperand(kBwdName, "dz", *dz, t, {0}); e.failure()) {
    return e;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    BwdArgs<T> a;
    a.f = MakeFwdArgs<T>(d, u, delta, A, Bm, Cm, Dskip, z, delta_bias);
    a.chunk_states = static_cast<const float*>(chunk_states.untyped_data());
    a.dy = static_cast<const T*>(dy.untyped_data());
    a.dlast = static_cast<const float*>(dlast.untyped_data());
    a.du = static_cast<T*>(du->untyped_data());
    a.ddelta = static_cast<T*>(ddelta->untyped_data());
    a.dz = static_cast<T*>(dz->untyped_data());
    const BwdPartials out{static_cast<float*>(dA->untyped_data()), static_cast<float*>(dB->untyped_data()),
                          static_cast<float*>(dC->untyped_data()),
                          static_cast<float*>(dDskip->untyped_data()),
                          static_cast<float*>(ddelta_bias->untyped_data())};
    return BwdImpl<T>(pool, a, out);
  };
  return t == ffi::DataType::F32 ? run(float{}) : run(Bf16{});
}

}  // namespace
}  // namespace selective_scan

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanFwdCpu, selective_scan::FwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // u [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // A [D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // Bm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Cm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Dskip [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // z [B, L, D] or [0] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta_bias [D] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // y [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // last_state [B, D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // chunk_states [B, nc, D, N] f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanBwdCpu, selective_scan::BwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // u [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // A [D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // Bm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Cm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Dskip [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // z [B, L, D] or [0] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta_bias [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // chunk_states [B, nc, D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // dy [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // dlast [B, D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // du [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // ddelta [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dA [D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dB [B, L, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dC [B, L, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dDskip [D] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dz [B, L, D] or [0] T
                                  .Ret<xla::ffi::AnyBuffer>()  // ddelta_bias [D] f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk"));
