// Runs the CUDA delta-rule and GRU kernels on the host (see cuda_host_shim.h) for tests.
//
// Usage: emulate_kernels delta fwd|bwd f32|bf16 B L H K V chunk DIR
//        emulate_kernels gru fwd|bwd f32|bf16 B L H DIR
// Inputs and outputs are raw little-endian float32 files in DIR, named as the FFI operands:
// delta fwd q k v beta h0 -> o last chunk_states; delta bwd q k v beta chunk_states dout
// dlast -> dq dk dv dbeta dh0; gru fwd gx h0 W b -> y last gates; gru bwd Wt h0 y gates dy
// dlast -> dgx dgh dh0. Launch geometry, scratch and the per-step launch order follow
// delta_rule_cuda.cu and gru_cuda.cu; outputs start as NaN so that a missed write shows.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_host_shim.h"
#include "emulation_io.h"
#include "delta_rule_cuda_bwd.cuh"
#include "delta_rule_cuda_fwd.cuh"
#include "gru_cuda_bwd.cuh"
#include "gru_cuda_fwd.cuh"

namespace delta_rule_cuda {
alignas(64) float smem[1 << 15];
}  // namespace delta_rule_cuda
namespace gru_cuda {
alignas(64) float smem[1 << 15];
}  // namespace gru_cuda

namespace {

using emu::NaNs;
using emu::Read;
using emu::ReadAs;
using emu::RunGrid;
using emu::Write;
using emu::WriteFrom;

template <typename Fn>
void DispatchRows(int64_t rows, Fn&& fn) {
  if (rows <= 4) return fn(std::integral_constant<int, 4>{});
  if (rows <= 8) return fn(std::integral_constant<int, 8>{});
  if (rows <= 16) return fn(std::integral_constant<int, 16>{});
  if (rows <= 32) return fn(std::integral_constant<int, 32>{});
  std::fprintf(stderr, "emulate: d_k too large for the kernel\n");
  std::exit(4);
}

// The sizes of a delta-rule call's arrays, and its q, k, v, beta read in the storage type.
template <typename T>
struct DeltaInputs {
  explicit DeltaInputs(const delta_rule_cuda::Dims& d)
      : keys(d.batch * d.length * d.heads * d.dk),
        values(d.batch * d.length * d.heads * d.dv),
        steps(d.batch * d.length * d.heads),
        state(d.batch * d.heads * d.dk * d.dv),
        q(ReadAs<T>("q", keys)),
        k(ReadAs<T>("k", keys)),
        v(ReadAs<T>("v", values)),
        beta(ReadAs<T>("beta", steps)) {}
  size_t keys, values, steps, state;
  std::vector<T> q, k, v, beta;
};

template <typename T>
void DeltaForward(delta_rule_cuda::Dims d) {
  using namespace delta_rule_cuda;
  const int64_t rows = MakeLayout(&d);
  DeltaInputs<T> in(d);
  const size_t bv = in.values, state = in.state;
  auto h0 = Read("h0", state);
  auto o = NaNs<T>(bv);
  auto last = NaNs<float>(state), chunks = NaNs<float>(state * d.nchunks);
  const FwdArgs<T> args{
      {in.q.data(), in.k.data(), in.v.data(), in.beta.data(), h0.data(), o.data(), last.data(), chunks.data()}, d};
  DispatchRows(rows, [&](auto r) {
    RunGrid(d.batch * d.heads, 1, kThreads, sizeof(float) * SharedFloats(d, 2, 1), smem, sizeof(smem),
            [&args] { DeltaRuleFwdKernel<T, decltype(r)::value>(args); });
  });
  WriteFrom("o", o);
  Write("last", last);
  Write("chunk_states", chunks);
}

template <typename T>
void DeltaBackward(delta_rule_cuda::Dims d) {
  using namespace delta_rule_cuda;
  const int64_t rows = MakeLayout(&d);
  DeltaInputs<T> in(d);
  const size_t bk = in.keys, bv = in.values, bl = in.steps, state = in.state;
  auto dout = ReadAs<T>("dout", bv);
  auto chunks = Read("chunk_states", state * d.nchunks), dlast = Read("dlast", state);
  auto dq = NaNs<T>(bk), dk = NaNs<T>(bk), dv = NaNs<T>(bv), dbeta = NaNs<T>(bl);
  auto dh0 = NaNs<float>(state);
  auto history = NaNs<float>(d.batch * d.heads * std::min(d.chunk, d.length) * d.cols);
  const BwdArgs<T> args{{in.q.data(), in.k.data(), in.v.data(), in.beta.data(), chunks.data(), dout.data(),
                         dlast.data(), dq.data(), dk.data(), dv.data(), dbeta.data(), dh0.data()},
                        history.data(),
                        d};
  DispatchRows(rows, [&](auto r) {
    RunGrid(d.batch * d.heads, 1, kThreads, sizeof(float) * SharedFloats(d, 4, 2), smem, sizeof(smem),
            [&args] { DeltaRuleBwdKernel<T, decltype(r)::value>(args); });
  });
  WriteFrom("dq", dq);
  WriteFrom("dk", dk);
  WriteFrom("dv", dv);
  WriteFrom("dbeta", dbeta);
  Write("dh0", dh0);
}

template <typename T>
void GruForward(const gru_cuda::Dims& d) {
  using namespace gru_cuda;
  const int64_t B = d.batch, L = d.length, H = d.hidden;
  auto gx = ReadAs<T>("gx", B * L * 3 * H);
  auto h0 = Read("h0", B * H), W = Read("W", H * 3 * H), b = Read("b", 3 * H);
  auto y = NaNs<T>(B * L * H);
  auto gates = NaNs<float>(B * L * 4 * H);
  std::vector<float> h(h0);
  h.resize(2 * B * H, std::numeric_limits<float>::quiet_NaN());
  FwdArgs<T> args{gx.data(), W.data(), b.data(), h.data(), h.data() + B * H, y.data(), gates.data(), d};
  for (int64_t step = 0; step < L; ++step) {
    args.h = h.data() + (step % 2) * B * H;
    args.next = h.data() + ((step + 1) % 2) * B * H;
    RunGrid(RowTiles(d), UnitTiles(d), kThreads, FwdSharedBytes(), smem, sizeof(smem),
            [&args, step] { GruFwdStepKernel<T>(args, step); });
  }
  WriteFrom("y", y);
  Write("last", std::vector<float>(h.begin() + (L % 2) * B * H, h.begin() + (L % 2 + 1) * B * H));
  Write("gates", gates);
}

template <typename T>
void GruBackward(const gru_cuda::Dims& d) {
  using namespace gru_cuda;
  const int64_t B = d.batch, L = d.length, H = d.hidden;
  auto Wt = Read("Wt", 3 * H * H), h0 = Read("h0", B * H), gates = Read("gates", B * L * 4 * H);
  auto y = ReadAs<T>("y", B * L * H), dy = ReadAs<T>("dy", B * L * H);
  auto dlast = Read("dlast", B * H);
  auto dgx = NaNs<T>(B * L * 3 * H);
  auto dgh = NaNs<float>(B * L * 3 * H);
  std::vector<float> buf(dlast);
  buf.resize(3 * B * H, std::numeric_limits<float>::quiet_NaN());
  BwdArgs<T> args{Wt.data(), h0.data(), y.data(), gates.data(), dy.data(), dgx.data(), dgh.data(),
                  buf.data(), buf.data() + 2 * B * H, buf.data() + B * H, d};
  const int64_t gate_blocks = std::min<int64_t>((B * H + kThreads - 1) / kThreads, 4096);
  for (int64_t step = L - 1, i = 0; step >= 0; --step, ++i) {
    args.carry = buf.data() + (i % 2) * B * H;
    args.next = buf.data() + ((i + 1) % 2) * B * H;
    RunGrid(gate_blocks, 1, kThreads, 0, smem, sizeof(smem), [&args, step] { GruBwdGatesKernel<T>(args, step); });
    RunGrid(RowTiles(d), UnitTiles(d), kThreads, BwdSharedBytes(), smem, sizeof(smem),
            [&args, step] { GruBwdCarryKernel<T>(args, step); });
  }
  WriteFrom("dgx", dgx);
  Write("dgh", dgh);
  Write("dh0", std::vector<float>(buf.begin() + (L % 2) * B * H, buf.begin() + (L % 2 + 1) * B * H));
}

template <typename Fwd, typename Bwd>
int Run(const std::string& pass, Fwd fwd, Bwd bwd) {
  if (pass == "fwd") {
    fwd();
  } else {
    bwd();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string kernel = argc > 1 ? argv[1] : "";
  if (kernel == "delta" && argc == 11) {
    delta_rule_cuda::Dims d{std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6]), std::atoll(argv[7]),
                            std::atoll(argv[8]), std::atoll(argv[9]), 0, 0, 0};
    d.nchunks = std::max<int64_t>(1, (d.length + d.chunk - 1) / d.chunk);
    emu::g_dir = argv[10];
    const bool bf16 = std::string(argv[3]) == "bf16";
    return Run(argv[2], [&] { bf16 ? DeltaForward<__nv_bfloat16>(d) : DeltaForward<float>(d); },
               [&] { bf16 ? DeltaBackward<__nv_bfloat16>(d) : DeltaBackward<float>(d); });
  }
  if (kernel == "gru" && argc == 8) {
    const gru_cuda::Dims d{std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6])};
    emu::g_dir = argv[7];
    const bool bf16 = std::string(argv[3]) == "bf16";
    return Run(argv[2], [&] { bf16 ? GruForward<__nv_bfloat16>(d) : GruForward<float>(d); },
               [&] { bf16 ? GruBackward<__nv_bfloat16>(d) : GruBackward<float>(d); });
  }
  std::fprintf(stderr, "usage: %s delta fwd|bwd f32|bf16 B L H K V chunk DIR | gru fwd|bwd f32|bf16 B L H DIR\n",
               argv[0]);
  return 1;
}
