// Runs the CUDA GRU handlers (xla_ffi/csrc/gru_cuda.cu: the per-step launch loops, scratch and
// copies as written) on the emulated device (emu_runtime.h, cuda_host_shim.h) for tests.
//
// Usage: emulate_gru fwd|bwd f32|bf16 B L H DIR
// Raw float32 files in DIR named as the FFI operands: fwd gx h0 W b -> y last gates; bwd Wt h0
// y gates dy dlast -> dgx dgh dh0. Outputs start as NaN.

#include <cstdlib>
#include <string>
#include <vector>

#include "emu_ffi.h"
#include "gru_cuda.cu"

namespace {

using emu::Array;

void Forward(bool bf16, int64_t B, int64_t L, int64_t H) {
  const Array gx = Array::Load("gx", bf16, {B, L, 3 * H}), h0 = Array::Load("h0", false, {B, H});
  const Array W = Array::Load("W", false, {H, 3 * H}), b = Array::Load("b", false, {3 * H});
  Array y(bf16, {B, L, H}), last(false, {B, H}), gates(false, {B, L, 4 * H});
  xla::ffi::DiagnosticEngine diagnostic;
  emu::Check(GruFwdImpl(emu::Stream(), emu::Scratch(diagnostic), gx.buffer(), h0.buffer(), W.buffer(), b.buffer(),
                        /*save_gates=*/true, y.result(), last.result(), gates.result()));
  y.Save("y");
  last.Save("last");
  gates.Save("gates");
}

void Backward(bool bf16, int64_t B, int64_t L, int64_t H) {
  const Array Wt = Array::Load("Wt", false, {3 * H, H}), h0 = Array::Load("h0", false, {B, H});
  const Array y = Array::Load("y", bf16, {B, L, H}), gates = Array::Load("gates", false, {B, L, 4 * H});
  const Array dy = Array::Load("dy", bf16, {B, L, H}), dlast = Array::Load("dlast", false, {B, H});
  Array dgx(bf16, {B, L, 3 * H}), dgh(false, {B, L, 3 * H}), dh0(false, {B, H});
  xla::ffi::DiagnosticEngine diagnostic;
  emu::Check(GruBwdImpl(emu::Stream(), emu::Scratch(diagnostic), Wt.buffer(), h0.buffer(), y.buffer(),
                        gates.buffer(), dy.buffer(), dlast.buffer(), dgx.result(), dgh.result(), dh0.result()));
  dgx.Save("dgx");
  dgh.Save("dgh");
  dh0.Save("dh0");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s fwd|bwd f32|bf16 B L H DIR\n", argv[0]);
    return 1;
  }
  const bool bf16 = std::string(argv[2]) == "bf16";
  emu::UseDir(argv[6]);
  const int64_t B = std::atoll(argv[3]), L = std::atoll(argv[4]), H = std::atoll(argv[5]);
  std::string(argv[1]) == "fwd" ? Forward(bf16, B, L, H) : Backward(bf16, B, L, H);
  return 0;
}
