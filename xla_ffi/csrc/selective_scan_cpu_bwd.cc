// Backward pass of the CPU selective scan (see selective_scan_cpu.h): for each chunk, in
// reverse, recompute the chunk's states from its saved boundary state, then walk it backwards.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "selective_scan_cpu.h"

namespace selective_scan::cpu {
namespace {

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

template <typename T>
FFI_INLINE void Gather(const FwdArgs<T>& a, const T* dy, int64_t b, int64_t d0, int cb, int64_t t0,
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

// Writes S rows of kLanes f32 values to a [batch, length, channels] output (cb real lanes).
template <typename T>
FFI_INLINE void Scatter(const float* src, T* dst, const ScanDims& d, int64_t b, int64_t d0, int cb,
                       int64_t t0, int64_t S) {
  for (int64_t i = 0; i < S; ++i) {
    T* row = dst + (b * d.length + t0 + i) * d.channels + d0;
    for (int c = 0; c < cb; ++c) Store(src[i * kLanes + c], row + c);
  }
}

// S steps of one channel block from [S][kLanes] scratch (the backward pass's recomputation):
// advances h[n][lane], writes y before the gate into `ypre`, every state h_i to hs[i + 1] and
// every exp(delta_i A) to as[i] ([S][N][kLanes]).
template <bool kClamp>
FFI_INLINE void RecomputeSteps(int64_t S, int64_t N, const float* __restrict dt, const float* __restrict u,
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
FFI_INLINE void BackwardStep(int64_t N, const float* __restrict Bt, const float* __restrict Ct,
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

// Prefetches the backward inputs (u, delta, dy, z) of steps [t0, t0 + S) of a channel block.
template <typename T>
FFI_INLINE void PrefetchBwdInputs(const BwdArgs<T>& a, int64_t b, int64_t d0, int64_t t0, int64_t S) {
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
FFI_INLINE void BwdBlock(const BwdArgs<T>& a, int64_t b, int64_t d0, int64_t next_d0, Scratch& s,
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
    BoolSwitch(!ExpInRange(s.dt, S * kLanes, amax), [&](auto c) FFI_INLINE_LAMBDA {
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
FFI_INLINE void BwdTaskBody(const BwdArgs<T>& a, int64_t task, int64_t tile, Scratch& s, const BwdPartials& p) {
  const int64_t nblocks = (a.f.d.channels + kLanes - 1) / kLanes, ntiles = (nblocks + tile - 1) / tile;
  const int64_t b = task / ntiles, blk0 = (task % ntiles) * tile;
  const int64_t blk1 = std::min(nblocks, blk0 + tile);
  for (int64_t blk = blk0; blk < blk1; ++blk) {
    BwdBlock(a, b, blk * kLanes, blk + 1 < blk1 ? (blk + 1) * kLanes : -1, s, p);
  }
}

FFI_ISA_VARIANTS(BwdTask, BwdTaskBody,
                 (const BwdArgs<T>& a, int64_t task, int64_t tile, Scratch& s, const BwdPartials& p),
                 (a, task, tile, s, p))

}  // namespace

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
  const int64_t tile = Tile(d, cpu_parallel::NumWorkers(pool, B * nblocks), nblocks);
  const int64_t tasks = B * ((nblocks + tile - 1) / tile);
  const int workers = cpu_parallel::NumWorkers(pool, tasks);
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
  const auto body = FFI_ISA_PICK(BwdTask, T);
  cpu_parallel::ParallelFor(pool, tasks, workers, [&](int64_t task, int w) { body(a, task, tile, scratch[w], parts[w]); });
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

template ffi::Error BwdImpl<float>(ffi::ThreadPool&, const BwdArgs<float>&, const BwdPartials&);
template ffi::Error BwdImpl<Bf16>(ffi::ThreadPool&, const BwdArgs<Bf16>&, const BwdPartials&);

}  // namespace selective_scan::cpu
