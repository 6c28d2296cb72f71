// Selective scan (Mamba) forward and backward as XLA FFI handlers for CUDA (sm_90).
//
// Contract (shared with selective_scan_cpu.cc): channels-last u, delta, z (B, L, D);
// A (D, N); Bm, Cm (B, L, N); Dskip, delta_bias (D,); T = F32 or BF16, compute in f32.
//   delta' = softplus(delta + delta_bias) or delta + delta_bias
//   h_t = exp(delta'_t * A) * h_{t-1} + delta'_t * Bm_t * u_t
//   y_t = sum_n Cm_t[n] h_t[n] + Dskip * u_t;  out = y * silu(z) when has_z.
// The kernels live in selective_scan_cuda_kernels.cuh; this file validates operands,
// zeroes accumulated outputs, takes the backward workspace from the FFI scratch
// allocator, launches on the FFI stream and checks the launch.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>

#include "selective_scan_common.h"
#include "selective_scan_cuda_kernels.cuh"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using namespace selective_scan_cuda;  // NOLINT(build/namespaces): this file is its front end

// ---------------------------------------------------------------------------
// Host side: validation, dispatch, handlers
// ---------------------------------------------------------------------------

#define SS_RETURN_IF_ERROR(expr)     \
  do {                               \
    ffi::Error err_ = (expr);        \
    if (err_.failure()) return err_; \
  } while (0)

using selective_scan::CheckOperand;

// The operand checks shared with the CPU handler (selective_scan_common.h), plus the
// CUDA kernel's own limit on the state size; fills the kernels' dims.
ffi::Error ValidateInputs(const char* where, const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta,
                          const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                          const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                          const ffi::AnyBuffer& delta_bias, bool softplus, bool has_z, int64_t chunk,
                          Dims* dims) {
  selective_scan::ScanDims sd;
  SS_RETURN_IF_ERROR(selective_scan::CheckForwardOperands(where, u, delta, A, Bm, Cm, Dskip, z, delta_bias,
                                                          softplus, has_z, chunk, &sd));
  if (sd.state < 1 || sd.state > kMaxState) {
    return ffi::Error::InvalidArgument(std::string(where) + ": state size N=" + std::to_string(sd.state) +
                                       " is not supported by the CUDA kernel (1 <= N <= " +
                                       std::to_string(kMaxState) + ")");
  }
  *dims = Dims{sd.batch, sd.length, sd.channels, sd.state, sd.chunk, sd.nchunks};
  return ffi::Error::Success();
}

ffi::Error CudaError(const char* where, const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": " + what + " failed: " + cudaGetErrorString(err));
}

ffi::Error Memset(const char* where, const char* name, void* data, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return ffi::Error::Success();
  const cudaError_t err = cudaMemsetAsync(data, 0, bytes, stream);
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": zeroing " + name + " failed: " +
                              cudaGetErrorString(err));
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

template <typename T>
const T* In(const ffi::AnyBuffer& buf) { return reinterpret_cast<const T*>(buf.untyped_data()); }

template <typename T>
T* Out(ffi::Result<ffi::AnyBuffer>& buf) { return reinterpret_cast<T*>(buf->untyped_data()); }

constexpr const char* kFwdName = "selective_scan_fwd (CUDA)";
constexpr const char* kBwdName = "selective_scan_bwd (CUDA)";

template <typename T>
ffi::Error LaunchFwd(cudaStream_t stream, const FwdArgs<T>& args) {
  const Dims& dims = args.dims;
  if (dims.length == 0) {  // no steps: the one saved chunk state is zeros
    SS_RETURN_IF_ERROR(Memset(kFwdName, "chunk_states", args.chunk_states,
                              sizeof(float) * dims.batch * dims.dim * dims.state, stream));
  }
  const int64_t blocks = WorkItems(dims, args.lay);
  if (blocks == 0) return ffi::Error::Success();
  if (blocks > INT32_MAX) return ffi::Error::InvalidArgument(std::string(kFwdName) + ": problem too large");
  const size_t shared = SharedBytes(args.lay, kFwdChannelArrays, kFwdStateArrays);
  return DispatchK(args.lay.per_lane, [&](auto k) {
    SelectiveScanFwdKernel<T, decltype(k)::value>
        <<<static_cast<unsigned>(blocks), kThreads, shared, stream>>>(args);
    return CudaError(kFwdName, "kernel launch");
  });
}

template <typename T>
ffi::Error FwdTyped(cudaStream_t stream, const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta,
                    const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                    const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z, const ffi::AnyBuffer& delta_bias,
                    bool softplus, bool has_z, const Dims& dims, ffi::Result<ffi::AnyBuffer>& y,
                    ffi::Result<ffi::AnyBuffer>& last_state, ffi::Result<ffi::AnyBuffer>& chunk_states) {
  Layout lay;
  SS_RETURN_IF_ERROR(ChooseLayout(kFwdName, dims, kFwdChannelBudget, kFwdStateBudget, &lay));
  FwdArgs<T> args{In<T>(u), In<T>(delta), In<float>(A), In<T>(Bm), In<T>(Cm), In<float>(Dskip), In<T>(z),
                  In<float>(delta_bias), Out<T>(y), Out<float>(last_state), Out<float>(chunk_states), dims,
                  lay, softplus, has_z};
  return LaunchFwd(stream, args);
}

ffi::Error SelectiveScanFwdImpl(cudaStream_t stream, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                                ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                                ffi::AnyBuffer delta_bias, bool softplus, bool has_z, int64_t chunk,
                                ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> last_state,
                                ffi::Result<ffi::AnyBuffer> chunk_states) {
  Dims dims;
  SS_RETURN_IF_ERROR(
      ValidateInputs(kFwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &dims));
  const ffi::DataType T = u.element_type();
  SS_RETURN_IF_ERROR(CheckOperand(kFwdName, "y (output)", *y, T, {dims.batch, dims.length, dims.dim}));
  SS_RETURN_IF_ERROR(CheckOperand(kFwdName, "last_state (output)", *last_state, ffi::DataType::F32,
                            {dims.batch, dims.dim, dims.state}));
  SS_RETURN_IF_ERROR(CheckOperand(kFwdName, "chunk_states (output)", *chunk_states, ffi::DataType::F32,
                            {dims.batch, dims.nchunks, dims.dim, dims.state}));
  if (T == ffi::DataType::F32) {
    return FwdTyped<float>(stream, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, dims, y,
                           last_state, chunk_states);
  }
  return FwdTyped<__nv_bfloat16>(stream, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, dims,
                                 y, last_state, chunk_states);
}

// The backward outputs, in contract order.
struct BwdOutputs {
  ffi::Result<ffi::AnyBuffer>& du;
  ffi::Result<ffi::AnyBuffer>& ddelta;
  ffi::Result<ffi::AnyBuffer>& dA;
  ffi::Result<ffi::AnyBuffer>& dB;
  ffi::Result<ffi::AnyBuffer>& dC;
  ffi::Result<ffi::AnyBuffer>& dDskip;
  ffi::Result<ffi::AnyBuffer>& dz;
  ffi::Result<ffi::AnyBuffer>& ddelta_bias;
};

template <typename T>
ffi::Error LaunchBwd(cudaStream_t stream, ffi::ScratchAllocator& scratch, BwdArgs<T> args) {
  const Dims& dims = args.dims;
  // Accumulated outputs start at zero (stream-ordered, before the kernel).
  SS_RETURN_IF_ERROR(Memset(kBwdName, "dA", args.dA, sizeof(float) * dims.dim * dims.state, stream));
  const size_t bln_bytes = sizeof(float) * dims.batch * dims.length * dims.state;
  SS_RETURN_IF_ERROR(Memset(kBwdName, "dB", args.dB, bln_bytes, stream));
  SS_RETURN_IF_ERROR(Memset(kBwdName, "dC", args.dC, bln_bytes, stream));
  SS_RETURN_IF_ERROR(Memset(kBwdName, "dDskip", args.dDskip, sizeof(float) * dims.dim, stream));
  SS_RETURN_IF_ERROR(Memset(kBwdName, "ddelta_bias", args.ddelta_bias, sizeof(float) * dims.dim, stream));
  if (WorkItems(dims, args.lay) == 0 || dims.length == 0) return ffi::Error::Success();
  const BwdGrid grid = MakeBwdGrid(dims, args.lay);
  const size_t bytes = grid.slot_bytes * static_cast<size_t>(grid.blocks);
  std::optional<void*> history = scratch.Allocate(bytes, 256);
  if (!history.has_value()) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted, std::string(kBwdName) + ": cannot allocate " +
                                                              std::to_string(bytes) +
                                                              " bytes of scratch for the state history");
  }
  args.history = static_cast<float*>(*history);
  args.hist_len = grid.hist_len;
  const int64_t blocks = grid.blocks;
  const size_t shared = SharedBytes(args.lay, kBwdChannelArrays, kBwdStateArrays);
  return DispatchK(args.lay.per_lane, [&](auto k) {
    SelectiveScanBwdKernel<T, decltype(k)::value>
        <<<static_cast<unsigned>(blocks), kThreads, shared, stream>>>(args);
    return CudaError(kBwdName, "kernel launch");
  });
}

template <typename T>
ffi::Error BwdTyped(cudaStream_t stream, ffi::ScratchAllocator& scratch, const ffi::AnyBuffer& u,
                    const ffi::AnyBuffer& delta, const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm,
                    const ffi::AnyBuffer& Cm, const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                    const ffi::AnyBuffer& delta_bias, const ffi::AnyBuffer& chunk_states,
                    const ffi::AnyBuffer& dy, const ffi::AnyBuffer& dlast, bool softplus, bool has_z,
                    const Dims& dims, BwdOutputs& out) {
  Layout lay;
  SS_RETURN_IF_ERROR(ChooseLayout(kBwdName, dims, kBwdChannelBudget, kBwdStateBudget, &lay));
  BwdArgs<T> args{In<T>(u), In<T>(delta), In<float>(A), In<T>(Bm), In<T>(Cm), In<float>(Dskip), In<T>(z),
                  In<float>(delta_bias), In<float>(chunk_states), In<T>(dy), In<float>(dlast),
                  Out<T>(out.du), Out<T>(out.ddelta), Out<float>(out.dA), Out<float>(out.dB),
                  Out<float>(out.dC), Out<float>(out.dDskip), Out<T>(out.dz), Out<float>(out.ddelta_bias),
                  /*history=*/nullptr, /*hist_len=*/0, dims, lay, softplus, has_z};
  return LaunchBwd(stream, scratch, args);
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
  SS_RETURN_IF_ERROR(
      ValidateInputs(kBwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &dims));
  const ffi::DataType T = u.element_type();
  const ffi::DataType F32 = ffi::DataType::F32;
  const int64_t Bsz = dims.batch, L = dims.length, D = dims.dim, N = dims.state;
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "chunk_states", chunk_states, F32, {Bsz, dims.nchunks, D, N}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dy", dy, T, {Bsz, L, D}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dlast", dlast, F32, {Bsz, D, N}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "du (output)", *du, T, {Bsz, L, D}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "ddelta (output)", *ddelta, T, {Bsz, L, D}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dA (output)", *dA, F32, {D, N}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dB (output)", *dB, F32, {Bsz, L, N}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dC (output)", *dC, F32, {Bsz, L, N}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dDskip (output)", *dDskip, F32, {D}));
  SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "ddelta_bias (output)", *ddelta_bias, F32, {D}));
  if (has_z) {
    SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz (output)", *dz, T, {Bsz, L, D}));
  } else {
    SS_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz (output)", *dz, T, {0}));
  }
  BwdOutputs out{du, ddelta, dA, dB, dC, dDskip, dz, ddelta_bias};
  if (T == ffi::DataType::F32) {
    return BwdTyped<float>(stream, scratch, u, delta, A, Bm, Cm, Dskip, z, delta_bias, chunk_states, dy,
                           dlast, softplus, has_z, dims, out);
  }
  return BwdTyped<__nv_bfloat16>(stream, scratch, u, delta, A, Bm, Cm, Dskip, z, delta_bias, chunk_states, dy,
                                 dlast, softplus, has_z, dims, out);
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
