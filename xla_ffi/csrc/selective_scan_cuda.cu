// Selective scan (Mamba) forward and backward as XLA FFI handlers for CUDA (sm_90).
//
// Contract (shared with selective_scan_cpu.cc): channels-last u, delta, z (B, L, D);
// A (D, N); Bm, Cm (B, L, N); Dskip, delta_bias (D,); T = F32 or BF16, compute in f32.
//   delta' = softplus(delta + delta_bias) or delta + delta_bias
//   h_t = exp(delta'_t * A) * h_{t-1} + delta'_t * Bm_t * u_t
//   y_t = sum_n Cm_t[n] h_t[n] + Dskip * u_t;  out = y * silu(z) when has_z.
// The kernels live in selective_scan_cuda_fwd.cuh and selective_scan_cuda_bwd.cuh; this file
// validates operands, zeroes accumulated outputs, takes the backward workspace from the FFI
// scratch allocator, launches on the FFI stream and checks the launch.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda_ffi_util.h"
#include "selective_scan_common.h"
#include "selective_scan_cuda_bwd.cuh"
#include "selective_scan_cuda_fwd.cuh"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using namespace selective_scan_cuda;  // NOLINT(build/namespaces): this file is its front end

// ---------------------------------------------------------------------------
// Host side: validation, dispatch, handlers
// ---------------------------------------------------------------------------

using cuda_ffi_util::Memset;
using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary

// The operand checks shared with the CPU handler (selective_scan_common.h), plus the
// CUDA kernel's own limit on the state size; fills the kernels' dims.
ffi::Error ValidateInputs(const char* where, const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta,
                          const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                          const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                          const ffi::AnyBuffer& delta_bias, bool softplus, bool has_z, int64_t chunk,
                          Dims* dims) {
  selective_scan::ScanDims sd;
  FFI_RETURN_IF_ERROR(selective_scan::CheckForwardOperands(where, u, delta, A, Bm, Cm, Dskip, z, delta_bias,
                                                          softplus, has_z, chunk, &sd));
  if (sd.state < 1 || sd.state > kMaxState) {
    return ffi::Error::InvalidArgument(std::string(where) + ": state size N=" + std::to_string(sd.state) +
                                       " is not supported by the CUDA kernel (1 <= N <= " +
                                       std::to_string(kMaxState) + ")");
  }
  *dims = Dims{sd.batch, sd.length, sd.channels, sd.state, sd.chunk, sd.nchunks};
  return ffi::Error::Success();
}

// Tuning override of the states held per thread (both kernels), for measuring layouts on a
// device: environment variable XLA_FFI_SCAN_CUDA_STATES_PER_THREAD = 1, 2, 4 or 8; unset or
// empty keeps the default layout. A value the state size cannot use is an error, not ignored.
constexpr const char* kPerLaneEnv = "XLA_FFI_SCAN_CUDA_STATES_PER_THREAD";

ffi::Error ChooseLayout(const char* where, const Dims& dims, int channel_budget, int state_budget,
                        Layout* lay) {
  int per_lane = 0;
  const char* text = std::getenv(kPerLaneEnv);
  if (text != nullptr && text[0] != '\0') {
    per_lane = std::atoi(text);
    if (!ValidPerLane(per_lane, NextPow2(dims.state))) {
      return ffi::Error::InvalidArgument(std::string(where) + ": " + kPerLaneEnv + "=" + text +
                                         " is not a valid layout for state size N=" +
                                         std::to_string(dims.state));
    }
  }
  *lay = MakeLayout(dims.state, channel_budget, state_budget, per_lane);
  return ffi::Error::Success();
}

// Calls fn(std::integral_constant<int, K>) for the layout's states-per-thread K.
template <typename Fn>
ffi::Error DispatchK(int per_lane, Fn&& fn) {
  switch (per_lane) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    default: return ffi::Error::Internal("selective_scan: unexpected states per thread");
  }
}

// Launches kernel_for(K) (a kernel instantiated for the layout's K) on `blocks` blocks.
template <typename Args, typename KernelFor>
ffi::Error Launch(const char* where, const Args& args, int64_t blocks, size_t shared, cudaStream_t stream,
                  KernelFor&& kernel_for) {
  if (blocks > INT32_MAX) return ffi::Error::InvalidArgument(std::string(where) + ": problem too large");
  return DispatchK(args.lay.per_lane, [&](auto k) {
    return cuda_ffi_util::Launch(where, "kernel launch", kernel_for(k), dim3(static_cast<unsigned>(blocks)),
                                 dim3(kThreads), shared, stream, args);
  });
}

// Override of the backward's history budget (bytes of scratch; default kHistoryBudgetBytes):
// a smaller one makes fewer blocks stride over more work items.
constexpr const char* kHistoryBytesEnv = "XLA_FFI_SCAN_CUDA_HISTORY_BYTES";

constexpr const char* kFwdName = "selective_scan_fwd (CUDA)";
constexpr const char* kBwdName = "selective_scan_bwd (CUDA)";

// The eight forward operands of a checked call as typed device pointers, with its size,
// layout and flags.
template <typename T>
ScanOperands<T> Operands(const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta, const ffi::AnyBuffer& A,
                         const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm, const ffi::AnyBuffer& Dskip,
                         const ffi::AnyBuffer& z, const ffi::AnyBuffer& delta_bias, const Dims& dims,
                         const Layout& lay, bool softplus, bool has_z) {
  return ScanOperands<T>{In<T>(u),    In<T>(delta), In<float>(A),         In<T>(Bm), In<T>(Cm),
                         In<float>(Dskip), In<T>(z), In<float>(delta_bias), dims,      lay,
                         softplus,         has_z};
}

template <typename T>
ffi::Error LaunchFwd(cudaStream_t stream, const FwdArgs<T>& args) {
  const Dims& dims = args.dims;
  if (dims.length == 0) {  // no steps: the one saved chunk state is zeros
    FFI_RETURN_IF_ERROR(Memset(kFwdName, "chunk_states", args.chunk_states,
                               sizeof(float) * dims.batch * dims.dim * dims.state, stream));
  }
  const int64_t blocks = WorkItems(dims, args.lay);
  if (blocks == 0) return ffi::Error::Success();
  const size_t shared = SharedBytes(args.lay, kFwdChannelArrays, kFwdStateArrays);
  return Launch(kFwdName, args, blocks, shared, stream,
                [](auto k) { return &SelectiveScanFwdKernel<T, decltype(k)::value>; });
}

ffi::Error SelectiveScanFwdImpl(cudaStream_t stream, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                                ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                                ffi::AnyBuffer delta_bias, bool softplus, bool has_z, int64_t chunk,
                                ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> last_state,
                                ffi::Result<ffi::AnyBuffer> chunk_states) {
  Dims dims;
  FFI_RETURN_IF_ERROR(
      ValidateInputs(kFwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &dims));
  const ffi::DataType t = u.element_type();
  const ffi::DataType F32 = ffi::DataType::F32;
  const ffi_checks::Expect expected[] = {
      {"y (output)", *y, t, {dims.batch, dims.length, dims.dim}},
      {"last_state (output)", *last_state, F32, {dims.batch, dims.dim, dims.state}},
      {"chunk_states (output)", *chunk_states, F32, {dims.batch, dims.nchunks, dims.dim, dims.state}},
  };
  FFI_RETURN_IF_ERROR(ffi_checks::CheckAll(kFwdName, expected));
  Layout lay;
  FFI_RETURN_IF_ERROR(ChooseLayout(kFwdName, dims, kFwdChannelBudget, kFwdStateBudget, &lay));
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) {
    using T = decltype(tag);
    const FwdArgs<T> args{Operands<T>(u, delta, A, Bm, Cm, Dskip, z, delta_bias, dims, lay, softplus, has_z),
                          Out<T>(y), Out<float>(last_state), Out<float>(chunk_states)};
    return LaunchFwd(stream, args);
  });
}

template <typename T>
ffi::Error LaunchBwd(cudaStream_t stream, ffi::ScratchAllocator& scratch, BwdArgs<T> args) {
  const Dims& dims = args.dims;
  // Accumulated outputs start at zero (stream-ordered, before the kernel).
  FFI_RETURN_IF_ERROR(Memset(kBwdName, "dA", args.dA, sizeof(float) * dims.dim * dims.state, stream));
  const size_t bln_bytes = sizeof(float) * dims.batch * dims.length * dims.state;
  FFI_RETURN_IF_ERROR(Memset(kBwdName, "dB", args.dB, bln_bytes, stream));
  FFI_RETURN_IF_ERROR(Memset(kBwdName, "dC", args.dC, bln_bytes, stream));
  FFI_RETURN_IF_ERROR(Memset(kBwdName, "dDskip", args.dDskip, sizeof(float) * dims.dim, stream));
  FFI_RETURN_IF_ERROR(Memset(kBwdName, "ddelta_bias", args.ddelta_bias, sizeof(float) * dims.dim, stream));
  if (WorkItems(dims, args.lay) == 0 || dims.length == 0) return ffi::Error::Success();
  int64_t history_budget = 0;
  FFI_RETURN_IF_ERROR(
      cuda_ffi_util::EnvLimit(kBwdName, kHistoryBytesEnv, static_cast<int64_t>(kHistoryBudgetBytes), &history_budget));
  const BwdGrid grid = MakeBwdGrid(dims, args.lay, static_cast<size_t>(history_budget));
  const size_t bytes = grid.slot_bytes * static_cast<size_t>(grid.blocks);
  std::optional<void*> history = scratch.Allocate(bytes, 256);
  if (!history.has_value()) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted, std::string(kBwdName) + ": cannot allocate " +
                                                              std::to_string(bytes) +
                                                              " bytes of scratch for the state history");
  }
  args.history = static_cast<float*>(*history);
  args.hist_len = grid.hist_len;
  const size_t shared = SharedBytes(args.lay, kBwdChannelArrays, kBwdStateArrays);
  return Launch(kBwdName, args, grid.blocks, shared, stream,
                [](auto k) { return &SelectiveScanBwdKernel<T, decltype(k)::value>; });
}

ffi::Error SelectiveScanBwdImpl(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer u,
                                ffi::AnyBuffer delta, ffi::AnyBuffer A, ffi::AnyBuffer Bm, ffi::AnyBuffer Cm,
                                ffi::AnyBuffer Dskip, ffi::AnyBuffer z, ffi::AnyBuffer delta_bias,
                                ffi::AnyBuffer chunk_states, ffi::AnyBuffer dy, ffi::AnyBuffer dlast,
                                bool softplus, bool has_z, int64_t chunk, ffi::Result<ffi::AnyBuffer> du,
                                ffi::Result<ffi::AnyBuffer> ddelta, ffi::Result<ffi::AnyBuffer> dA,
                                ffi::Result<ffi::AnyBuffer> dB, ffi::Result<ffi::AnyBuffer> dC,
                                ffi::Result<ffi::AnyBuffer> dDskip, ffi::Result<ffi::AnyBuffer> dz,
                                ffi::Result<ffi::AnyBuffer> ddelta_bias) {
  Dims dims;
  FFI_RETURN_IF_ERROR(
      ValidateInputs(kBwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &dims));
  const ffi::DataType t = u.element_type();
  const ffi::DataType F32 = ffi::DataType::F32;
  const int64_t B = dims.batch, L = dims.length, D = dims.dim, N = dims.state;
  const ffi_checks::Expect expected[] = {
      {"chunk_states", chunk_states, F32, {B, dims.nchunks, D, N}},
      {"dy", dy, t, {B, L, D}},
      {"dlast", dlast, F32, {B, D, N}},
      {"du (output)", *du, t, {B, L, D}},
      {"ddelta (output)", *ddelta, t, {B, L, D}},
      {"dA (output)", *dA, F32, {D, N}},
      {"dB (output)", *dB, F32, {B, L, N}},
      {"dC (output)", *dC, F32, {B, L, N}},
      {"dDskip (output)", *dDskip, F32, {D}},
      {"ddelta_bias (output)", *ddelta_bias, F32, {D}},
  };
  FFI_RETURN_IF_ERROR(ffi_checks::CheckAll(kBwdName, expected));
  if (has_z) {
    FFI_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz (output)", *dz, t, {B, L, D}));
  } else {
    FFI_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz (output)", *dz, t, {0}));
  }
  Layout lay;
  FFI_RETURN_IF_ERROR(ChooseLayout(kBwdName, dims, kBwdChannelBudget, kBwdStateBudget, &lay));
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) {
    using T = decltype(tag);
    const BwdArgs<T> args{Operands<T>(u, delta, A, Bm, Cm, Dskip, z, delta_bias, dims, lay, softplus, has_z),
                          In<float>(chunk_states), In<T>(dy), In<float>(dlast), Out<T>(du), Out<T>(ddelta),
                          Out<float>(dA), Out<float>(dB), Out<float>(dC), Out<float>(dDskip), Out<T>(dz),
                          Out<float>(ddelta_bias), /*history=*/nullptr, /*hist_len=*/0};
    return LaunchBwd(stream, scratch, args);
  });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanFwdCuda, SelectiveScanFwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // u (B, L, D)
                                  .Arg<ffi::AnyBuffer>()  // delta (B, L, D)
                                  .Arg<ffi::AnyBuffer>()  // A (D, N) f32
                                  .Arg<ffi::AnyBuffer>()  // Bm (B, L, N)
                                  .Arg<ffi::AnyBuffer>()  // Cm (B, L, N)
                                  .Arg<ffi::AnyBuffer>()  // Dskip (D,) f32
                                  .Arg<ffi::AnyBuffer>()  // z (B, L, D) or (0,)
                                  .Arg<ffi::AnyBuffer>()  // delta_bias (D,) f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk")
                                  .Ret<ffi::AnyBuffer>()   // y (B, L, D)
                                  .Ret<ffi::AnyBuffer>()   // last_state (B, D, N) f32
                                  .Ret<ffi::AnyBuffer>());  // chunk_states (B, nc, D, N) f32

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanBwdCuda, SelectiveScanBwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Arg<ffi::AnyBuffer>()  // u
                                  .Arg<ffi::AnyBuffer>()  // delta
                                  .Arg<ffi::AnyBuffer>()  // A
                                  .Arg<ffi::AnyBuffer>()  // Bm
                                  .Arg<ffi::AnyBuffer>()  // Cm
                                  .Arg<ffi::AnyBuffer>()  // Dskip
                                  .Arg<ffi::AnyBuffer>()  // z
                                  .Arg<ffi::AnyBuffer>()  // delta_bias
                                  .Arg<ffi::AnyBuffer>()  // chunk_states (B, nc, D, N) f32
                                  .Arg<ffi::AnyBuffer>()  // dy (B, L, D)
                                  .Arg<ffi::AnyBuffer>()  // dlast (B, D, N) f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk")
                                  .Ret<ffi::AnyBuffer>()   // du (B, L, D)
                                  .Ret<ffi::AnyBuffer>()   // ddelta (B, L, D)
                                  .Ret<ffi::AnyBuffer>()   // dA (D, N) f32
                                  .Ret<ffi::AnyBuffer>()   // dB (B, L, N) f32
                                  .Ret<ffi::AnyBuffer>()   // dC (B, L, N) f32
                                  .Ret<ffi::AnyBuffer>()   // dDskip (D,) f32
                                  .Ret<ffi::AnyBuffer>()   // dz (B, L, D) or (0,)
                                  .Ret<ffi::AnyBuffer>());  // ddelta_bias (D,) f32
