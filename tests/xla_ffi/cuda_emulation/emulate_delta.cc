// Runs the CUDA delta-rule handlers (xla_ffi/csrc/delta_rule_cuda.cu, host code and kernels as
// written) on the emulated device (emu_runtime.h, cuda_host_shim.h) for tests.
//
// Usage: emulate_delta fwd|bwd f32|bf16 B L H K V chunk DIR
// Raw float32 files in DIR named as the FFI operands: fwd q k v beta h0 -> o last chunk_states;
// bwd q k v beta chunk_states dout dlast -> dq dk dv dbeta dh0. Outputs start as NaN.

#include <cstdlib>
#include <string>
#include <vector>

#include "delta_rule_cuda.cu"
#include "emu_ffi.h"

namespace {

using emu::Array;

struct Call {
  int64_t B, L, H, K, V, chunk, nchunks;
  bool bf16;
  std::vector<int64_t> keys() const { return {B, L, H, K}; }
  std::vector<int64_t> values() const { return {B, L, H, V}; }
  std::vector<int64_t> state() const { return {B, H, K, V}; }
  std::vector<int64_t> chunks() const { return {B, nchunks, H, K, V}; }
};

struct Inputs {
  explicit Inputs(const Call& c)
      : q(Array::Load("q", c.bf16, c.keys())), k(Array::Load("k", c.bf16, c.keys())),
        v(Array::Load("v", c.bf16, c.values())), beta(Array::Load("beta", c.bf16, {c.B, c.L, c.H})) {}
  Array q, k, v, beta;
};

void Forward(const Call& c) {
  const Inputs in(c);
  const Array h0 = Array::Load("h0", false, c.state());
  Array o(c.bf16, c.values()), last(false, c.state()), chunks(false, c.chunks());
  emu::Check(DeltaRuleFwdImpl(emu::Stream(), in.q.buffer(), in.k.buffer(), in.v.buffer(), in.beta.buffer(),
                              h0.buffer(), c.chunk, o.result(), last.result(), chunks.result()));
  o.Save("o");
  last.Save("last");
  chunks.Save("chunk_states");
}

void Backward(const Call& c) {
  const Inputs in(c);
  const Array chunks = Array::Load("chunk_states", false, c.chunks()), dout = Array::Load("dout", c.bf16, c.values());
  const Array dlast = Array::Load("dlast", false, c.state());
  Array dq(c.bf16, c.keys()), dk(c.bf16, c.keys()), dv(c.bf16, c.values()), dbeta(c.bf16, {c.B, c.L, c.H}),
      dh0(false, c.state());
  xla::ffi::DiagnosticEngine diagnostic;
  emu::Check(DeltaRuleBwdImpl(emu::Stream(), emu::Scratch(diagnostic), in.q.buffer(), in.k.buffer(), in.v.buffer(),
                              in.beta.buffer(), chunks.buffer(), dout.buffer(), dlast.buffer(), c.chunk, dq.result(),
                              dk.result(), dv.result(), dbeta.result(), dh0.result()));
  dq.Save("dq");
  dk.Save("dk");
  dv.Save("dv");
  dbeta.Save("dbeta");
  dh0.Save("dh0");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr, "usage: %s fwd|bwd f32|bf16 B L H K V chunk DIR\n", argv[0]);
    return 1;
  }
  Call c{std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6]), std::atoll(argv[7]),
         std::atoll(argv[8]), 0, std::string(argv[2]) == "bf16"};
  c.nchunks = std::max<int64_t>(1, (c.L + c.chunk - 1) / c.chunk);
  emu::UseDir(argv[9]);
  std::string(argv[1]) == "fwd" ? Forward(c) : Backward(c);
  return 0;
}
