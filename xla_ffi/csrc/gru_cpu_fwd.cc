// Forward pass of the CPU GRU recurrence (see gru_cpu.h): every h_t, the last h, and (for the
// backward) each step's r, z, n and gh_n.

#include <cstdint>
#include <vector>

#include "gru_cpu.h"

namespace gru::cpu {
namespace {

// Scratch of one worker: the current and next h of its rows ([rows][Hp]).
struct FwdScratch {
  FwdScratch(int64_t rows, int64_t Hp) : arena(size_t(2 * rows * Hp)) {
    h = arena.Take(rows * Hp);
    next = arena.Take(rows * Hp);
  }
  FloatArena arena;
  float *h, *next;
};

// Step t for R rows starting at batch row b0 (their h at h[0..R), row stride Hp) and the eight
// hidden units from c0: the three gates' matmul columns in registers, then the gate math.
template <typename T, int R>
FFI_INLINE void FwdBlock(const FwdArgs<T>& a, const Panels& W, int64_t b0, int64_t t, int64_t c0, int64_t Hp,
                         const float* __restrict h, float* __restrict next) {
  const int64_t H = a.d.hidden, L = a.d.length;
  V8 ar[R], az[R], an[R];
  const V8 br = LoadLanes(a.b + c0, int(H - c0)), bz = LoadLanes(a.b + H + c0, int(H - c0)),
           bn = LoadLanes(a.b + 2 * H + c0, int(H - c0));
  for (int m = 0; m < R; ++m) {
    ar[m] = br;
    az[m] = bz;
    an[m] = bn;
  }
  for (int64_t k = 0; k < H; ++k) {
    const V8 wr = LoadV(W.At(c0, k, 0)), wz = LoadV(W.At(c0, k, 1)), wn = LoadV(W.At(c0, k, 2));
    for (int m = 0; m < R; ++m) {
      const V8 hk = Splat(h[m * Hp + k]);
      ar[m] += hk * wr;
      az[m] += hk * wz;
      an[m] += hk * wn;
    }
  }
  const int lanes = int(std::min<int64_t>(kV, H - c0));
  for (int m = 0; m < R; ++m) {
    const int64_t row = (b0 + m) * L + t;
    const T* gx = a.gx + row * 3 * H + c0;
    const V8 r = Sigmoid(LoadLanes(gx, lanes) + ar[m]);
    const V8 z = Sigmoid(LoadLanes(gx + H, lanes) + az[m]);
    const V8 n = Tanh(LoadLanes(gx + 2 * H, lanes) + r * an[m]);
    const V8 hv = (1.0f - z) * n + z * LoadV(h + m * Hp + c0);
    StoreV(hv, next + m * Hp + c0);
    StoreLanes(hv, a.y + row * H + c0, lanes);
    if (a.gates != nullptr) {
      float* g = a.gates + row * 4 * H + c0;
      StoreLanes(r, g, lanes);
      StoreLanes(z, g + H, lanes);
      StoreLanes(n, g + 2 * H, lanes);
      StoreLanes(an[m], g + 3 * H, lanes);
    }
  }
}

// Step t for batch rows [b0, b0 + rows) (their h at h, next h to next; row stride Hp):
// column blocks outer, so a block's weights serve every row.
template <typename T>
FFI_INLINE void FwdStep(const FwdArgs<T>& a, const Panels& W, int64_t b0, int64_t rows, int64_t t,
                        const float* h, float* next) {
  const int64_t Hp = RoundUp8(a.d.hidden);
  for (int64_t c0 = 0; c0 < a.d.hidden; c0 += kV) {
    for (int64_t m0 = 0; m0 < rows; m0 += kRows) {
      WithRows(std::min<int64_t>(kRows, rows - m0), [&](auto r) FFI_INLINE_LAMBDA {
        FwdBlock<T, decltype(r)::value>(a, W, b0 + m0, t, c0, Hp, h + m0 * Hp, next + m0 * Hp);
      });
    }
  }
}

// The whole sequence of batch rows [b0, b0 + rows).
template <typename T>
FFI_INLINE void FwdTaskBody(const FwdArgs<T>& a, const Panels& W, int64_t b0, int64_t rows, FwdScratch& s) {
  const int64_t H = a.d.hidden, Hp = RoundUp8(H);
  for (int64_t m = 0; m < rows; ++m) std::copy(a.h0 + (b0 + m) * H, a.h0 + (b0 + m + 1) * H, s.h + m * Hp);
  for (int64_t t = 0; t < a.d.length; ++t) {
    FwdStep<T>(a, W, b0, rows, t, s.h, s.next);
    std::swap(s.h, s.next);
  }
  for (int64_t m = 0; m < rows; ++m) std::copy(s.h + m * Hp, s.h + m * Hp + H, a.last + (b0 + m) * H);
}

FFI_ISA_VARIANTS(FwdTask, FwdTaskBody,
                 (const FwdArgs<T>& a, const Panels& W, int64_t b0, int64_t rows, FwdScratch& s),
                 (a, W, b0, rows, s))

}  // namespace

template <typename T>
ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a) {
  const GruDims& d = a.d;
  const Panels W(a.W, d.hidden, 3 * d.hidden, d.hidden, 3, d.hidden, d.length > 1);
  const auto body = FFI_ISA_PICK(FwdTask, T);
  RunRowTasks(pool, d.batch, [&](int64_t rows) { return FwdScratch(rows, RoundUp8(d.hidden)); },
              [&](int64_t b0, int64_t rows, FwdScratch& s) { body(a, W, b0, rows, s); });
  return ffi::Error::Success();
}

template ffi::Error FwdImpl<float>(ffi::ThreadPool&, const FwdArgs<float>&);
template ffi::Error FwdImpl<Bf16>(ffi::ThreadPool&, const FwdArgs<Bf16>&);

}  // namespace gru::cpu
