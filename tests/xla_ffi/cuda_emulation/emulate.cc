// Runs the CUDA selective-scan kernels on the host (see cuda_host_shim.h) for tests.
//
// Usage: emulate fwd|bwd f32|bf16 B L D N chunk softplus has_z DIR
// Inputs are raw little-endian float32 files in DIR (u, delta, A, Bm, Cm, Dskip, z,
// delta_bias; for bwd also chunk_states, dy, dlast); outputs are written there the same
// way (fwd: y, last_state, chunk_states; bwd: du, ddelta, dA, dB, dC, dDskip, dz,
// ddelta_bias). bf16 runs round the inputs to bfloat16 first, as the Python wrapper would.
// Launch geometry, zeroed accumulators and history slots follow selective_scan_cuda.cu.
// Outputs the kernels should write are pre-filled with NaN so that a missed write shows.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cuda_host_shim.h"
#include "emulation_io.h"
#include "selective_scan_cuda_bwd.cuh"
#include "selective_scan_cuda_fwd.cuh"


namespace selective_scan_cuda {
constexpr size_t kSmemFloats = 1 << 15;
alignas(64) float smem[kSmemFloats];
}  // namespace selective_scan_cuda

namespace {

using namespace selective_scan_cuda;
using namespace emu;

template <typename Fn>
void DispatchK(int per_lane, Fn&& fn) {
  switch (per_lane) {
    case 1: fn(std::integral_constant<int, 1>{}); break;
    case 2: fn(std::integral_constant<int, 2>{}); break;
    case 4: fn(std::integral_constant<int, 4>{}); break;
    case 8: fn(std::integral_constant<int, 8>{}); break;
    default: std::fprintf(stderr, "emulate: bad per_lane %d\n", per_lane); std::exit(4);
  }
}

struct Inputs {
  Dims dims;
  bool softplus, has_z;
};

// The handlers' tuning override (selective_scan_cuda.cu): states per thread from
// XLA_FFI_SCAN_CUDA_STATES_PER_THREAD, 0 (the default layout) when unset.
int PerLaneOverride(const Dims& d) {
  const char* text = std::getenv("XLA_FFI_SCAN_CUDA_STATES_PER_THREAD");
  if (text == nullptr || text[0] == '\0') return 0;
  const int per_lane = std::atoi(text);
  if (!ValidPerLane(per_lane, NextPow2(d.state))) {
    std::fprintf(stderr, "emulate: invalid states per thread %s for N=%lld\n", text,
                 static_cast<long long>(d.state));
    std::exit(5);
  }
  return per_lane;
}

template <typename T>
void Forward(const Inputs& in) {
  const Dims& d = in.dims;
  const size_t bld = d.batch * d.length * d.dim, bln = d.batch * d.length * d.state;
  const size_t zsize = in.has_z ? bld : 0;
  auto u = ReadAs<T>("u", bld), delta = ReadAs<T>("delta", bld), Bm = ReadAs<T>("Bm", bln),
       Cm = ReadAs<T>("Cm", bln), z = ReadAs<T>("z", zsize);
  auto A = Read("A", d.dim * d.state), Dskip = Read("Dskip", d.dim), bias = Read("delta_bias", d.dim);
  auto y = NaNs<T>(bld);
  auto last = NaNs<float>(d.batch * d.dim * d.state);
  auto chunks = NaNs<float>(d.batch * d.nchunks * d.dim * d.state);
  if (d.length == 0) std::fill(chunks.begin(), chunks.end(), 0.f);  // the handler's memset
  const Layout lay = MakeLayout(d.state, kFwdChannelBudget, kFwdStateBudget, PerLaneOverride(d));
  FwdArgs<T> args{{u.data(), delta.data(), A.data(), Bm.data(), Cm.data(), Dskip.data(), z.data(), bias.data(), d,
                   lay, in.softplus, in.has_z},
                  y.data(), last.data(), chunks.data()};
  DispatchK(args.lay.per_lane, [&](auto k) {
    RunGrid(WorkItems(d, args.lay), 1, kThreads, SharedBytes(args.lay, kFwdChannelArrays, kFwdStateArrays), smem,
            sizeof(smem), [&args] { SelectiveScanFwdKernel<T, decltype(k)::value>(args); });
  });
  WriteFrom("y", y);
  Write("last_state", last);
  Write("chunk_states", chunks);
}

template <typename T>
void Backward(const Inputs& in) {
  const Dims& d = in.dims;
  const size_t bld = d.batch * d.length * d.dim, bln = d.batch * d.length * d.state;
  const size_t zsize = in.has_z ? bld : 0;
  auto u = ReadAs<T>("u", bld), delta = ReadAs<T>("delta", bld), Bm = ReadAs<T>("Bm", bln),
       Cm = ReadAs<T>("Cm", bln), z = ReadAs<T>("z", zsize), dy = ReadAs<T>("dy", bld);
  auto A = Read("A", d.dim * d.state), Dskip = Read("Dskip", d.dim), bias = Read("delta_bias", d.dim);
  auto chunks = Read("chunk_states", d.batch * d.nchunks * d.dim * d.state);
  auto dlast = Read("dlast", d.batch * d.dim * d.state);
  auto du = NaNs<T>(bld), ddelta = NaNs<T>(bld), dz = NaNs<T>(zsize);
  std::vector<float> dA(d.dim * d.state, 0.f), dB(bln, 0.f), dC(bln, 0.f), dD(d.dim, 0.f), dbias(d.dim, 0.f);
  const Layout lay = MakeLayout(d.state, kBwdChannelBudget, kBwdStateBudget, PerLaneOverride(d));
  BwdArgs<T> args{{u.data(), delta.data(), A.data(), Bm.data(), Cm.data(), Dskip.data(), z.data(), bias.data(), d,
                   lay, in.softplus, in.has_z},
                  chunks.data(), dy.data(), dlast.data(), du.data(), ddelta.data(), dA.data(),
                  dB.data(), dC.data(), dD.data(), dz.data(), dbias.data(), nullptr, 0};
  if (WorkItems(d, args.lay) > 0 && d.length > 0) {
    const BwdGrid grid = MakeBwdGrid(d, args.lay);
    std::vector<float> history(grid.slot_bytes / sizeof(float) * grid.blocks,
                               std::numeric_limits<float>::quiet_NaN());
    args.history = history.data();
    args.hist_len = grid.hist_len;
    DispatchK(args.lay.per_lane, [&](auto k) {
      RunGrid(grid.blocks, 1, kThreads, SharedBytes(args.lay, kBwdChannelArrays, kBwdStateArrays), smem,
              sizeof(smem), [&args] { SelectiveScanBwdKernel<T, decltype(k)::value>(args); });
    });
  }
  WriteFrom("du", du);
  WriteFrom("ddelta", ddelta);
  Write("dA", dA);
  Write("dB", dB);
  Write("dC", dC);
  Write("dDskip", dD);
  WriteFrom("dz", dz);
  Write("ddelta_bias", dbias);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: %s fwd|bwd f32|bf16 B L D N chunk softplus has_z DIR\n", argv[0]);
    return 1;
  }
  const std::string mode = argv[1], dtype = argv[2];
  Inputs in;
  in.dims.batch = std::atoll(argv[3]);
  in.dims.length = std::atoll(argv[4]);
  in.dims.dim = std::atoll(argv[5]);
  in.dims.state = std::atoll(argv[6]);
  in.dims.chunk = std::atoll(argv[7]);
  in.dims.nchunks = std::max<int64_t>(1, (in.dims.length + in.dims.chunk - 1) / in.dims.chunk);
  in.softplus = std::atoi(argv[8]) != 0;
  in.has_z = std::atoi(argv[9]) != 0;
  emu::g_dir = argv[10];
  const bool bf16 = dtype == "bf16";
  if (mode == "fwd") {
    bf16 ? Forward<__nv_bfloat16>(in) : Forward<float>(in);
  } else {
    bf16 ? Backward<__nv_bfloat16>(in) : Backward<float>(in);
  }
  return 0;
}
