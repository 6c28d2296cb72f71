// Runs the CUDA selective-scan handlers (xla_ffi/csrc/selective_scan_cuda.cu, host code and
// kernels as written) on the emulated device (emu_runtime.h, cuda_host_shim.h) for tests.
//
// Usage: emulate fwd|bwd f32|bf16 B L D N chunk softplus has_z DIR
// Inputs are raw float32 files in DIR (u, delta, A, Bm, Cm, Dskip, z, delta_bias; for bwd also
// chunk_states, dy, dlast); outputs are written there the same way (fwd: y, last_state,
// chunk_states; bwd: du, ddelta, dA, dB, dC, dDskip, dz, ddelta_bias). A bf16 run rounds the
// bfloat16 operands as the Python wrapper's cast would. Outputs start as NaN.

#include <cstdlib>
#include <string>
#include <vector>

#include "emu_ffi.h"
#include "selective_scan_cuda.cu"

namespace {

using emu::Array;

struct Call {
  int64_t B, L, D, N, chunk, nchunks;
  bool bf16, softplus, has_z;
  std::vector<int64_t> bld() const { return {B, L, D}; }
  std::vector<int64_t> bln() const { return {B, L, N}; }
  std::vector<int64_t> zdims() const { return has_z ? bld() : std::vector<int64_t>{0}; }
};

struct Inputs {
  explicit Inputs(const Call& c)
      : u(Array::Load("u", c.bf16, c.bld())), delta(Array::Load("delta", c.bf16, c.bld())),
        A(Array::Load("A", false, {c.D, c.N})), Bm(Array::Load("Bm", c.bf16, c.bln())),
        Cm(Array::Load("Cm", c.bf16, c.bln())), Dskip(Array::Load("Dskip", false, {c.D})),
        z(Array::Load("z", c.bf16, c.zdims())), bias(Array::Load("delta_bias", false, {c.D})) {}
  Array u, delta, A, Bm, Cm, Dskip, z, bias;
};

void Forward(const Call& c) {
  const Inputs in(c);
  Array y(c.bf16, c.bld()), last(false, {c.B, c.D, c.N}), chunks(false, {c.B, c.nchunks, c.D, c.N});
  emu::Check(SelectiveScanFwdImpl(emu::Stream(), in.u.buffer(), in.delta.buffer(), in.A.buffer(), in.Bm.buffer(),
                                  in.Cm.buffer(), in.Dskip.buffer(), in.z.buffer(), in.bias.buffer(), c.softplus,
                                  c.has_z, c.chunk, y.result(), last.result(), chunks.result()));
  y.Save("y");
  last.Save("last_state");
  chunks.Save("chunk_states");
}

void Backward(const Call& c) {
  const Inputs in(c);
  const Array chunks = Array::Load("chunk_states", false, {c.B, c.nchunks, c.D, c.N});
  const Array dy = Array::Load("dy", c.bf16, c.bld()), dlast = Array::Load("dlast", false, {c.B, c.D, c.N});
  Array du(c.bf16, c.bld()), ddelta(c.bf16, c.bld()), dA(false, {c.D, c.N}), dB(false, c.bln()),
      dC(false, c.bln()), dD(false, {c.D}), dz(c.bf16, c.zdims()), dbias(false, {c.D});
  xla::ffi::DiagnosticEngine diagnostic;
  emu::Check(SelectiveScanBwdImpl(emu::Stream(), emu::Scratch(diagnostic), in.u.buffer(), in.delta.buffer(),
                                  in.A.buffer(), in.Bm.buffer(), in.Cm.buffer(), in.Dskip.buffer(), in.z.buffer(),
                                  in.bias.buffer(), chunks.buffer(), dy.buffer(), dlast.buffer(), c.softplus,
                                  c.has_z, c.chunk, du.result(), ddelta.result(), dA.result(), dB.result(),
                                  dC.result(), dD.result(), dz.result(), dbias.result()));
  du.Save("du");
  ddelta.Save("ddelta");
  dA.Save("dA");
  dB.Save("dB");
  dC.Save("dC");
  dD.Save("dDskip");
  dz.Save("dz");
  dbias.Save("ddelta_bias");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: %s fwd|bwd f32|bf16 B L D N chunk softplus has_z DIR\n", argv[0]);
    return 1;
  }
  Call c{std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6]), std::atoll(argv[7]), 0,
         std::string(argv[2]) == "bf16", std::atoi(argv[8]) != 0, std::atoi(argv[9]) != 0};
  c.nchunks = std::max<int64_t>(1, (c.L + c.chunk - 1) / c.chunk);
  emu::UseDir(argv[10]);
  std::string(argv[1]) == "fwd" ? Forward(c) : Backward(c);
  return 0;
}
