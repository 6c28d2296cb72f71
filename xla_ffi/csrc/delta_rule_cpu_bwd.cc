// Backward pass of the CPU delta rule (see delta_rule_cpu.h).
//
// With the carried dS = dL/dS_t and w_t = beta_t e_t, a reverse step is
//   dS += q_t do_t^T;  dq_t = S_t do_t;  dw = dS^T k_t;  dk_t = dS w_t + S_{t-1} du;
//   dbeta_t = dw . e_t;  dv_t = beta_t dw;  du = -beta_t dw;  dS_{t-1} = dS + k_t du^T,
// with S_{t-1} = S_t - k_t w_t^T. The sums over the value lanes (dq, dk) are per row of the
// state: eight rows' vector partials at a time become eight sums with Sum8.

#include <cstdint>
#include <vector>

#include "delta_rule_cpu.h"

namespace delta_rule::cpu {
namespace {

// Scratch of one worker: the state and its gradient, a chunk of e_t rows, one step's rows, and
// the per-row vector partials of the three sums over value lanes.
struct BwdScratch {
  BwdScratch(int64_t K, int64_t Vp, int64_t steps)
      : arena(size_t(2 * K * Vp + steps * Vp + 4 * K + 2 * Vp + 3 * RoundUp8(K) * kV)) {
    for (float** state : {&S, &dS}) *state = arena.Take(K * Vp);
    e = arena.Take(steps * Vp);
    for (float** row : {&q, &k, &dq, &dk}) *row = arena.Take(K);
    for (float** row : {&v, &dout}) *row = arena.Take(Vp);  // v (recomputation), then dv
    for (float** partial : {&pq, &pa, &pb}) *partial = arena.Take(RoundUp8(K) * kV);  // rows past K stay 0
  }
  FloatArena arena;
  float *S, *dS, *e, *q, *k, *dq, *dk, *v, *dout, *pq, *pa, *pb;
};

// out[j] += the lane sum of partial row j (rows [0, K) of kV floats), eight rows per Sum8.
FFI_INLINE void AddRowSums(const float* partial, int64_t K, float* out) {
  for (int64_t j0 = 0; j0 < K; j0 += 8) {
    const V8 sums = Sum8(partial + j0 * kV);
    for (int64_t i = 0; i < std::min<int64_t>(8, K - j0); ++i) out[j0 + i] += sums[i];
  }
}

// One reverse step (formulas at the top): S holds S_t on entry and S_{t-1} on exit; dS holds
// dL/dS_t on entry and dL/dS_{t-1} on exit; writes dq, dk (zeroed by the caller), dv into `v`;
// returns dbeta.
template <int NV>
FFI_INLINE float StepBackward(int64_t K, int64_t Vp, const float* __restrict q, const float* __restrict k,
                              const float* __restrict e, float beta, const float* __restrict dout,
                              float* __restrict S, float* __restrict dS, BwdScratch& s) {
  float dbeta = 0.0f;
  for (int64_t v0 = 0; v0 < Vp; v0 += NV * kV) {
    V8 w[NV], dov[NV], dw[NV] = {};
    for (int n = 0; n < NV; ++n) {
      w[n] = beta * LoadV(e + v0 + n * kV);
      dov[n] = LoadV(dout + v0 + n * kV);
    }
    for (int64_t j = 0; j < K; ++j) {
      const V8 qj = Splat(q[j]), kj = Splat(k[j]);
      const float* srow = S + j * Vp + v0;
      float* drow = dS + j * Vp + v0;
      V8 aq = V8{}, aa = V8{};
      for (int n = 0; n < NV; ++n) {
        const V8 dsv = LoadV(drow + n * kV) + qj * dov[n];
        StoreV(dsv, drow + n * kV);
        aq += LoadV(srow + n * kV) * dov[n];
        dw[n] += kj * dsv;
        aa += dsv * w[n];
      }
      StoreV(aq, s.pq + j * kV);
      StoreV(aa, s.pa + j * kV);
    }
    V8 du[NV], db = V8{};
    for (int n = 0; n < NV; ++n) {
      db += dw[n] * LoadV(e + v0 + n * kV);
      du[n] = -beta * dw[n];
      StoreV(beta * dw[n], s.v + v0 + n * kV);
    }
    for (int64_t j = 0; j < K; ++j) {
      const V8 kj = Splat(k[j]);
      float* srow = S + j * Vp + v0;
      float* drow = dS + j * Vp + v0;
      V8 ab = V8{};
      for (int n = 0; n < NV; ++n) {
        const V8 sv = LoadV(srow + n * kV) - kj * w[n];
        StoreV(sv, srow + n * kV);
        ab += sv * du[n];
        StoreV(LoadV(drow + n * kV) + kj * du[n], drow + n * kV);
      }
      StoreV(ab, s.pb + j * kV);
    }
    AddRowSums(s.pq, K, s.dq);
    AddRowSums(s.pa, K, s.dk);
    AddRowSums(s.pb, K, s.dk);
    for (int c = 0; c < kV; ++c) dbeta += db[c];
  }
  return dbeta;
}

// The whole backward of one (batch, head): chunks in reverse, each recomputed from its saved
// state, then walked backwards.
template <typename T>
FFI_INLINE void BwdTaskBody(const BwdArgs<T>& a, int64_t task, BwdScratch& s) {
  const DeltaDims& d = *a.d;
  const int64_t b = task / d.heads, h = task % d.heads, K = d.dk, V = d.dv, Vp = RoundUp8(V);
  LoadState(a.dlast + d.State(b, h), K, V, Vp, s.dS);
  WithVectors(VectorsPerBlock(Vp), [&](auto nv) FFI_INLINE_LAMBDA {
    constexpr int NV = decltype(nv)::value;
    for (int64_t c = d.nchunks - 1; c >= 0; --c) {
      const int64_t t0 = c * d.chunk, t1 = std::min(d.length, t0 + d.chunk);
      LoadState(a.chunk_states + d.ChunkState(b, c, h), K, V, Vp, s.S);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t row = d.Row(b, t, h);
        LoadRow(a.k + row * K, K, K, s.k);
        LoadRow(a.v + row * V, V, Vp, s.v);
        StepForward<NV, true>(K, Vp, nullptr, s.k, s.v, ToF32(a.beta[row]), s.S, s.e + (t - t0) * Vp);
      }
      for (int64_t t = t1 - 1; t >= t0; --t) {
        const int64_t row = d.Row(b, t, h);
        LoadRow(a.q + row * K, K, K, s.q);
        LoadRow(a.k + row * K, K, K, s.k);
        LoadRow(a.dout + row * V, V, Vp, s.dout);
        std::fill(s.dq, s.dq + K, 0.0f);
        std::fill(s.dk, s.dk + K, 0.0f);
        const float dbeta = StepBackward<NV>(K, Vp, s.q, s.k, s.e + (t - t0) * Vp, ToF32(a.beta[row]), s.dout,
                                             s.S, s.dS, s);
        for (int64_t i = 0; i < K; ++i) {
          Store(s.dq[i], a.dq + row * K + i);
          Store(s.dk[i], a.dk + row * K + i);
        }
        for (int64_t i = 0; i < V; ++i) Store(s.v[i], a.dv + row * V + i);
        Store(dbeta, a.dbeta + row);
      }
    }
  });
  SaveState(s.dS, K, V, Vp, a.dh0 + d.State(b, h));
}

FFI_ISA_VARIANTS(BwdTask, BwdTaskBody, (const BwdArgs<T>& a, int64_t task, BwdScratch& s), (a, task, s))

}  // namespace

template <typename T>
ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a) {
  const DeltaDims& d = *a.d;
  const auto body = FFI_ISA_PICK(BwdTask, T);
  const int64_t steps = std::min(d.chunk, d.length);
  cpu_parallel::RunTasks(pool, d.batch * d.heads, [&] { return BwdScratch(d.dk, RoundUp8(d.dv), steps); },
                         [&](int64_t task, BwdScratch& s) { body(a, task, s); });
  return ffi::Error::Success();
}

template ffi::Error BwdImpl<float>(ffi::ThreadPool&, const BwdArgs<float>&);
template ffi::Error BwdImpl<Bf16>(ffi::ThreadPool&, const BwdArgs<Bf16>&);

}  // namespace delta_rule::cpu
