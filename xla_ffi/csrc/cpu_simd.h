// Vectorisable float32 math shared by the CPU kernels: bfloat16 storage, eight-lane GCC
// vectors (one AVX2 register in the AVX2+FMA builds, two SSE registers in the baseline
// ones), range-reduced exp2 / exp / softplus / sigmoid / tanh, lane sums, and a zeroed
// scratch arena. Every helper is always inlined, so it compiles for the instruction set of
// the task function that calls it (see cpu_parallel.h, FFI_ISA_VARIANT).
#ifndef XLA_FFI_CSRC_CPU_SIMD_H_
#define XLA_FFI_CSRC_CPU_SIMD_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#define FFI_INLINE inline __attribute__((always_inline))
#define FFI_INLINE_LAMBDA __attribute__((always_inline))

namespace cpu_simd {

using Bf16 = uint16_t;  // bfloat16 storage bits

// ---------------------------------------------------------------------------------------
// Vectorisable scalar math (the compiler turns the fixed-trip lane loops into SIMD).

FFI_INLINE float ToF32(float x) { return x; }
FFI_INLINE float ToF32(Bf16 b) {
  const uint32_t v = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
FFI_INLINE void Store(float x, float* p) { *p = x; }
FFI_INLINE void Store(float x, Bf16* p) {  // round to nearest even; NaN stays NaN
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

FFI_INLINE V8 LoadV(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FFI_INLINE void StoreV(V8 v, float* p) { std::memcpy(p, &v, sizeof v); }
FFI_INLINE V8 Splat(float x) { return V8{} + x; }

// Bit views of float32 (scalar or vector) values, for the exponent arithmetic in Exp2.
FFI_INLINE uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
FFI_INLINE float FromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
FFI_INLINE U8 Bits(V8 x) { return (U8)x; }  // vector casts keep the bits
FFI_INLINE V8 FromBits(U8 b) { return (V8)b; }
FFI_INLINE float Clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
FFI_INLINE V8 Clamp(V8 x, float lo, float hi) {  // maxps/minps; NaN becomes lo
  const V8 l = Splat(lo), h = Splat(hi);
  x = x > l ? x : l;
  return x < h ? x : h;
}

// 2^t for a float or a V8, for |t| <= 125 (callers that cannot bound t use Exp2). round(t)
// comes from the low mantissa bits of t + 1.5 * 2^23 and is added straight into the exponent
// field of the polynomial's value (no multiply); 2^f on [-0.5, 0.5] is a degree-5 minimax
// polynomial (max relative error 1.9e-7 evaluated in float32).
template <typename F>
FFI_INLINE F Exp2Unclamped(F t) {
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
FFI_INLINE F Exp2(F t) {
  return Exp2Unclamped(Clamp(t, -125.0f, 127.0f));
}

constexpr float kLog2e = 1.44269504088896341f;
template <typename F>
FFI_INLINE F Exp(F x) {
  return Exp2(x * kLog2e);
}

// softplus(x) = max(x, 0) + log1p(e), e = exp(-|x|) in (0, 1], for a float or a V8: log1p(e) =
// 2 atanh(s), s = e / (2 + e) in (0, 1/3], from atanh's odd series up to s^13 (truncation
// under 2e-8 relative), so small e loses nothing to cancellation. NaN stays NaN. `grad` (if
// given) receives d softplus / dx = sigmoid(x).
template <typename F>
FFI_INLINE F Softplus(F x, F* grad = nullptr) {
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
FFI_INLINE F Sigmoid(F x) {
  return 1.0f / (1.0f + Exp(-x));
}

// The lane sums of eight vectors v[0..7] as one vector (lane k: the sum of v[k]): two rounds
// of pairwise adds within 128-bit halves (vhaddps) and one across them, 7 adds for 8 sums.
FFI_INLINE V8 Sum8(const float* v) {
  auto hadd = [](V8 x, V8 y) FFI_INLINE_LAMBDA {
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
FFI_INLINE float MaxAbs(const float* x, int64_t count) {
  V8 m = V8{};
  for (int64_t k = 0; k < count; k += kV) {
    const V8 v = LoadV(x + k), av = v < 0.0f ? -v : v;
    m = av > m ? av : m;
  }
  float r = 0.0f;
  for (int c = 0; c < kV; ++c) r = std::max(r, m[c]);
  return r;
}

// Tanh for a float or a V8: 1 - 2 / (exp(2x) + 1), exact at the saturated ends.
template <typename F>
FFI_INLINE F Tanh(F x) {
  return 1.0f - 2.0f / (Exp(2.0f * x) + 1.0f);
}

// Calls run(float{}) when the buffers are float32, else run(Bf16{}) (the storage type was
// checked to be one of the two): the handlers' dtype dispatch.
template <typename Run>
FFI_INLINE auto DispatchStorage(bool is_f32, Run&& run) {
  return is_f32 ? run(float{}) : run(Bf16{});
}

// f(std::true_type{}) when `flag`, else f(std::false_type{}): one call site for the two
// instantiations of code templated on a bool (mamba's BOOL_SWITCH).
template <typename F>
FFI_INLINE auto BoolSwitch(bool flag, F&& f) {
  return flag ? f(std::true_type{}) : f(std::false_type{});
}

// The first `count` values at p (any count; none for count <= 0) as one float32 vector, zero
// past `count`.
template <typename T>
FFI_INLINE V8 LoadLanes(const T* __restrict p, int count) {
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
FFI_INLINE void StoreLanes(V8 v, T* __restrict p, int count) {
  if constexpr (std::is_same_v<T, float>) {
    if (count >= kV) return StoreV(v, p);
  }
  for (int c = 0; c < std::min(count, kV); ++c) Store(v[c], p + c);
}

// One zeroed float buffer handed out in consecutive slices (the kernels' scratch structs carve
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

}  // namespace cpu_simd

#endif  // XLA_FFI_CSRC_CPU_SIMD_H_
