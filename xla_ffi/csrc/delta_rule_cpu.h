// CPU delta rule (DeltaNet): what the forward (delta_rule_cpu_fwd.cc) and backward
// (delta_rule_cpu_bwd.cc) files share; delta_rule_cpu.cc holds the handlers.
//
// One task is one (batch, head) sequence; its [d_k, d_v] state stays in a scratch array with
// rows padded to whole eight-lane vectors (Vp floats; pad lanes stay zero). A step walks the
// state's rows twice per block of NV vectors of value lanes (1, 2 or 4, the widest that
// divides Vp): u = S^T k (one FMA per row and vector), then S += k w^T and o += q_j S_j (two),
// with u, w and o in registers. The value lanes of a step are independent, so no horizontal
// sum is needed going forward. The backward pass recomputes each chunk's steps from its saved
// boundary state keeping only e_t = v_t - u_t, and walks the chunk in reverse, rebuilding
// S_{t-1} = S_t - k_t w_t^T from S_t (exact but for float rounding, over at most a chunk).
#ifndef XLA_FFI_CSRC_DELTA_RULE_CPU_H_
#define XLA_FFI_CSRC_DELTA_RULE_CPU_H_

#include <algorithm>
#include <cstdint>

#include "cpu_parallel.h"
#include "cpu_simd.h"
#include "delta_rule_args.h"
#include "delta_rule_common.h"

namespace delta_rule::cpu {

using namespace cpu_simd;  // NOLINT(build/namespaces): the kernels are written in its vocabulary

template <typename T>
struct FwdArgs : FwdPointers<T> {
  const DeltaDims* d;
};

template <typename T>
struct BwdArgs : BwdPointers<T> {
  const DeltaDims* d;
};

FFI_INLINE int64_t RoundUp8(int64_t n) { return (n + kV - 1) / kV * kV; }

// Vectors per block of value lanes: the widest of 4, 2, 1 that divides Vp / 8.
inline int VectorsPerBlock(int64_t padded_dv) {
  const int64_t vectors = padded_dv / kV;
  return vectors % 4 == 0 ? 4 : (vectors % 2 == 0 ? 2 : 1);
}

// Calls f(std::integral_constant<int, NV>) for nv = 1, 2 or 4.
template <typename F>
FFI_INLINE void WithVectors(int nv, F&& f) {
  if (nv == 4) {
    f(std::integral_constant<int, 4>{});
  } else if (nv == 2) {
    f(std::integral_constant<int, 2>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// Copies n values of src as float32 into dst, zero-filling dst up to `padded`.
template <typename T>
FFI_INLINE void LoadRow(const T* src, int64_t n, int64_t padded, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ToF32(src[i]);
  for (int64_t i = n; i < padded; ++i) dst[i] = 0.0f;
}

// A [K, V] state at src into rows of Vp floats (pad lanes zero), or back.
FFI_INLINE void LoadState(const float* src, int64_t K, int64_t V, int64_t Vp, float* S) {
  for (int64_t j = 0; j < K; ++j) LoadRow(src + j * V, V, Vp, S + j * Vp);
}
FFI_INLINE void SaveState(const float* S, int64_t K, int64_t V, int64_t Vp, float* dst) {
  for (int64_t j = 0; j < K; ++j) std::copy(S + j * Vp, S + j * Vp + V, dst + j * V);
}

// One forward step on the state S [K][Vp]: u = S^T k, e = v - u, S += beta k e^T; then o = S^T q,
// or with kRecompute (the backward's recomputation) e saved to `out` instead of o.
template <int NV, bool kRecompute>
FFI_INLINE void StepForward(int64_t K, int64_t Vp, const float* __restrict q, const float* __restrict k,
                            const float* __restrict v, float beta, float* __restrict S, float* __restrict out) {
  for (int64_t v0 = 0; v0 < Vp; v0 += NV * kV) {
    V8 u[NV] = {}, w[NV], acc[NV] = {};
    for (int64_t j = 0; j < K; ++j) {
      const V8 kj = Splat(k[j]);
      const float* row = S + j * Vp + v0;
      for (int n = 0; n < NV; ++n) u[n] += kj * LoadV(row + n * kV);
    }
    for (int n = 0; n < NV; ++n) {
      const V8 ev = LoadV(v + v0 + n * kV) - u[n];
      if (kRecompute) StoreV(ev, out + v0 + n * kV);
      w[n] = beta * ev;
    }
    for (int64_t j = 0; j < K; ++j) {
      const V8 kj = Splat(k[j]);
      float* row = S + j * Vp + v0;
      for (int n = 0; n < NV; ++n) {
        const V8 sv = LoadV(row + n * kV) + kj * w[n];
        StoreV(sv, row + n * kV);
        if (!kRecompute) acc[n] += Splat(q[j]) * sv;
      }
    }
    if (!kRecompute) {
      for (int n = 0; n < NV; ++n) StoreV(acc[n], out + v0 + n * kV);
    }
  }
}

// The forward and backward passes over a whole call, instantiated for T = float and Bf16.
template <typename T> ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a);
template <typename T> ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a);

}  // namespace delta_rule::cpu

#endif  // XLA_FFI_CSRC_DELTA_RULE_CPU_H_
