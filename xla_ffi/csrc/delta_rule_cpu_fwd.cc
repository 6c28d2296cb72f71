// Forward pass of the CPU delta rule (see delta_rule_cpu.h): o, the last state and the
// chunk-boundary states the backward pass recomputes from.

#include <cstdint>
#include <vector>

#include "delta_rule_cpu.h"

namespace delta_rule::cpu {
namespace {

// Scratch of one worker: the state and one step's rows.
struct FwdScratch {
  FwdScratch(int64_t K, int64_t Vp) : arena(size_t(K * Vp + 2 * K + 2 * Vp)) {
    S = arena.Take(K * Vp);
    q = arena.Take(K);
    k = arena.Take(K);
    v = arena.Take(Vp);
    o = arena.Take(Vp);
  }
  FloatArena arena;
  float *S, *q, *k, *v, *o;
};

// The whole sequence of one (batch, head): task = b * heads + h.
template <typename T>
FFI_INLINE void FwdTaskBody(const FwdArgs<T>& a, int64_t task, FwdScratch& s) {
  const DeltaDims& d = *a.d;
  const int64_t b = task / d.heads, h = task % d.heads, K = d.dk, V = d.dv, Vp = RoundUp8(V);
  LoadState(a.h0 + d.State(b, h), K, V, Vp, s.S);
  WithVectors(VectorsPerBlock(Vp), [&](auto nv) FFI_INLINE_LAMBDA {
    for (int64_t t = 0; t < d.length; ++t) {
      if (t % d.chunk == 0) SaveState(s.S, K, V, Vp, a.chunk_states + d.ChunkState(b, t / d.chunk, h));
      const int64_t row = d.Row(b, t, h);
      LoadRow(a.q + row * K, K, K, s.q);
      LoadRow(a.k + row * K, K, K, s.k);
      LoadRow(a.v + row * V, V, Vp, s.v);
      StepForward<decltype(nv)::value, false>(K, Vp, s.q, s.k, s.v, ToF32(a.beta[row]), s.S, s.o);
      for (int64_t i = 0; i < V; ++i) Store(s.o[i], a.o + row * V + i);
    }
  });
  if (d.length == 0) SaveState(s.S, K, V, Vp, a.chunk_states + d.ChunkState(b, 0, h));
  SaveState(s.S, K, V, Vp, a.last + d.State(b, h));
}

FFI_ISA_VARIANTS(FwdTask, FwdTaskBody, (const FwdArgs<T>& a, int64_t task, FwdScratch& s), (a, task, s))

}  // namespace

template <typename T>
ffi::Error FwdImpl(ffi::ThreadPool& pool, const FwdArgs<T>& a) {
  const DeltaDims& d = *a.d;
  const auto body = FFI_ISA_PICK(FwdTask, T);
  cpu_parallel::RunTasks(pool, d.batch * d.heads, [&] { return FwdScratch(d.dk, RoundUp8(d.dv)); },
                         [&](int64_t task, FwdScratch& s) { body(a, task, s); });
  return ffi::Error::Success();
}

template ffi::Error FwdImpl<float>(ffi::ThreadPool&, const FwdArgs<float>&);
template ffi::Error FwdImpl<Bf16>(ffi::ThreadPool&, const FwdArgs<Bf16>&);

}  // namespace delta_rule::cpu
