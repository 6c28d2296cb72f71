// Backward pass of the CPU GRU recurrence (see gru_cpu.h). With dh = dL/dh_t (from y_t and the
// later steps), the saved r, z, n, gh_n and h_{t-1}:
//   dn = dh (1 - z) (1 - n^2);  dr = dn gh_n r (1 - r);  dz = dh (h_{t-1} - n) z (1 - z);
//   dgx = (dr, dz, dn);  dgh = (dr, dz, dn r);  dh_{t-1} = dh z + dgh W^T.

#include <cstdint>
#include <vector>

#include "gru_cpu.h"

namespace gru::cpu {
namespace {

// Scratch of one worker: dL/dh of its rows ([rows][Hp]) and one step's dgh rows ([rows][3H]).
struct BwdScratch {
  BwdScratch(int64_t rows, int64_t Hp, int64_t H) : arena(size_t(2 * rows * Hp + rows * 3 * H + kV)) {
    dh = arena.Take(rows * Hp);
    carry = arena.Take(rows * Hp);
    dgh = arena.Take(rows * 3 * H + kV);
  }
  FloatArena arena;
  float *dh, *carry, *dgh;
};

// The gate gradients of step t for batch row b (its dL/dh_t at dh) and the eight hidden units
// from c0: writes dgx and dgh (output and scratch row `dgh_row`) and dh z into `carry`.
template <typename T>
FFI_INLINE void GateGradients(const BwdArgs<T>& a, int64_t b, int64_t t, int64_t c0, const float* dh,
                              float* dgh_row, float* carry) {
  const int64_t H = a.d.hidden, L = a.d.length, row = b * L + t;
  const int lanes = int(std::min<int64_t>(kV, H - c0));
  const float* g = a.gates + row * 4 * H + c0;
  const V8 r = LoadLanes(g, lanes), z = LoadLanes(g + H, lanes), n = LoadLanes(g + 2 * H, lanes),
           ghn = LoadLanes(g + 3 * H, lanes);
  const V8 hprev = t > 0 ? LoadLanes(a.y + (row - 1) * H + c0, lanes) : LoadLanes(a.h0 + b * H + c0, lanes);
  const V8 d = LoadV(dh + c0);
  const V8 dn = d * (1.0f - z) * (1.0f - n * n);
  const V8 dr = dn * ghn * r * (1.0f - r);
  const V8 dz = d * (hprev - n) * z * (1.0f - z);
  const V8 dhn = dn * r;
  T* gx = a.dgx + row * 3 * H + c0;
  float* gh = a.dgh + row * 3 * H + c0;
  StoreLanes(dr, gx, lanes);
  StoreLanes(dz, gx + H, lanes);
  StoreLanes(dn, gx + 2 * H, lanes);
  StoreLanes(dr, gh, lanes);
  StoreLanes(dz, gh + H, lanes);
  StoreLanes(dhn, gh + 2 * H, lanes);
  StoreLanes(dr, dgh_row + c0, lanes);
  StoreLanes(dz, dgh_row + H + c0, lanes);
  StoreLanes(dhn, dgh_row + 2 * H + c0, lanes);
  StoreV(d * z, carry + c0);
}

// Calls f(std::integral_constant<int, NC>) for nc = 1, 2 or 3 vectors of hidden units.
template <typename F>
FFI_INLINE void WithColumns(int nc, F&& f) {
  if (nc == 3) return f(std::integral_constant<int, 3>{});
  if (nc == 2) return f(std::integral_constant<int, 2>{});
  return f(std::integral_constant<int, 1>{});
}

// carry[m] += dgh[m] W^T for R rows and the NC * 8 hidden units from c0 (NC panels of W^T);
// R * NC accumulators in registers.
template <int R, int NC>
FFI_INLINE void AddRecurrentGradient(const Panels& Wt, int64_t H, int64_t Hp, int64_t c0,
                                     const float* __restrict dgh, float* __restrict carry) {
  V8 acc[R][NC];
  for (int m = 0; m < R; ++m) {
    for (int n = 0; n < NC; ++n) acc[m][n] = LoadV(carry + m * Hp + c0 + n * kV);
  }
  for (int64_t k = 0; k < 3 * H; ++k) {
    V8 w[NC];
    for (int n = 0; n < NC; ++n) w[n] = LoadV(Wt.At(c0 + n * kV, k));
    for (int m = 0; m < R; ++m) {
      const V8 g = Splat(dgh[m * 3 * H + k]);
      for (int n = 0; n < NC; ++n) acc[m][n] += g * w[n];
    }
  }
  for (int m = 0; m < R; ++m) {
    for (int n = 0; n < NC; ++n) StoreV(acc[m][n], carry + m * Hp + c0 + n * kV);
  }
}

// The whole backward of batch rows [b0, b0 + rows), steps in reverse: per step dh = dy_t +
// carry, the gate gradients with carry = dh z, then carry += dgh W^T in blocks of up to three
// vectors of units by four rows.
template <typename T>
FFI_INLINE void BwdTaskBody(const BwdArgs<T>& a, const Panels& Wt, int64_t b0, int64_t rows, BwdScratch& s) {
  const int64_t H = a.d.hidden, Hp = RoundUp8(H);
  for (int64_t m = 0; m < rows; ++m) std::copy(a.dlast + (b0 + m) * H, a.dlast + (b0 + m + 1) * H, s.carry + m * Hp);
  for (int64_t t = a.d.length - 1; t >= 0; --t) {
    for (int64_t m = 0; m < rows; ++m) {
      const int64_t row = (b0 + m) * a.d.length + t;
      for (int64_t c = 0; c < H; ++c) s.dh[m * Hp + c] = ToF32(a.dy[row * H + c]) + s.carry[m * Hp + c];
      for (int64_t c0 = 0; c0 < H; c0 += kV) {
        GateGradients(a, b0 + m, t, c0, s.dh + m * Hp, s.dgh + m * 3 * H, s.carry + m * Hp);
      }
    }
    for (int64_t c0 = 0; c0 < H;) {
      const int nc = int(std::min<int64_t>(3, (H - c0 + kV - 1) / kV));
      for (int64_t m0 = 0; m0 < rows; m0 += kRows) {
        WithRows(std::min<int64_t>(kRows, rows - m0), [&](auto r) FFI_INLINE_LAMBDA {
          constexpr int R = decltype(r)::value;
          WithColumns(nc, [&](auto n) FFI_INLINE_LAMBDA {
            AddRecurrentGradient<R, decltype(n)::value>(Wt, H, Hp, c0, s.dgh + m0 * 3 * H, s.carry + m0 * Hp);
          });
        });
      }
      c0 += nc * kV;
    }
  }
  for (int64_t m = 0; m < rows; ++m) std::copy(s.carry + m * Hp, s.carry + m * Hp + H, a.dh0 + (b0 + m) * H);
}

FFI_ISA_VARIANTS(BwdTask, BwdTaskBody,
                 (const BwdArgs<T>& a, const Panels& Wt, int64_t b0, int64_t rows, BwdScratch& s),
                 (a, Wt, b0, rows, s))

}  // namespace

template <typename T>
ffi::Error BwdImpl(ffi::ThreadPool& pool, const BwdArgs<T>& a) {
  const GruDims& d = a.d;
  const Panels Wt(a.Wt, 3 * d.hidden, d.hidden, d.hidden, 1, 0, d.length > 1);
  const auto body = FFI_ISA_PICK(BwdTask, T);
  RunRowTasks(pool, d.batch, [&](int64_t rows) { return BwdScratch(rows, RoundUp8(d.hidden), d.hidden); },
              [&](int64_t b0, int64_t rows, BwdScratch& s) { body(a, Wt, b0, rows, s); });
  return ffi::Error::Success();
}

template ffi::Error BwdImpl<float>(ffi::ThreadPool&, const BwdArgs<float>&);
template ffi::Error BwdImpl<Bf16>(ffi::ThreadPool&, const BwdArgs<Bf16>&);

}  // namespace gru::cpu
