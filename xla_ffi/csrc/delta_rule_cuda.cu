// Delta rule (DeltaNet) forward and backward as XLA FFI handlers for CUDA (sm_90):
// DeltaRuleFwdCuda and DeltaRuleBwdCuda. The kernels live in delta_rule_cuda_fwd.cuh and
// delta_rule_cuda_bwd.cuh; this file validates operands (delta_rule_common.h, plus the
// kernels' limits d_v <= 128 and d_k <= 32 * parts, parts = 128 / max(4, NextPow2(d_v))), takes the backward's
// history slots from the FFI scratch allocator, launches on the FFI stream (opting in to more than
// 48 KiB of shared memory where the shape needs it) and checks the launch.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "cuda_ffi_util.h"
#include "delta_rule_common.h"
#include "delta_rule_cuda_bwd.cuh"
#include "delta_rule_cuda_fwd.cuh"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using delta_rule::DeltaDims;
using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary
using namespace delta_rule_cuda;  // NOLINT(build/namespaces): this file is its front end

constexpr const char* kFwdName = "delta_rule_fwd (CUDA)";
constexpr const char* kBwdName = "delta_rule_bwd (CUDA)";

// The kernels' dims for checked inputs, or InvalidArgument past their limits; `rows` gets
// the state rows each thread holds.
ffi::Error KernelDims(const char* where, const DeltaDims& in, Dims* d, int64_t* rows) {
  if (in.dv > kMaxDv) {
    return Invalid(where, "d_v=" + std::to_string(in.dv) + " is not supported by the CUDA kernel (d_v <= " +
                                          std::to_string(kMaxDv) + ")");
  }
  *d = Dims{in.batch, in.length, in.heads, in.dk, in.dv, in.chunk, in.nchunks, 0, 0};
  *rows = MakeLayout(d);
  if (*rows > kMaxRows) {
    return Invalid(where, "d_k=" + std::to_string(in.dk) + " with d_v=" + std::to_string(in.dv) +
                                          " is not supported by the CUDA kernel (d_k <= " +
                                          std::to_string(kMaxRows * d->parts) + ")");
  }
  return ffi::Error::Success();
}

// Calls fn(std::integral_constant<int, R>) for the smallest R in 4, 8, 16, 32 holding `rows`.
template <typename Fn>
ffi::Error DispatchRows(int64_t rows, Fn&& fn) {
  if (rows <= 4) return fn(std::integral_constant<int, 4>{});
  if (rows <= 8) return fn(std::integral_constant<int, 8>{});
  if (rows <= 16) return fn(std::integral_constant<int, 16>{});
  return fn(std::integral_constant<int, 32>{});
}

// Launches kernel_for(R) (the kernel instantiated for the smallest R holding `rows` state rows
// per thread) with one block per (batch, head) sequence.
template <typename Args, typename KernelFor>
ffi::Error Launch(const char* where, const Args& args, int64_t rows, size_t shared, cudaStream_t stream,
                  KernelFor&& kernel_for) {
  const int64_t blocks = args.d.batch * args.d.heads;
  if (blocks == 0) return ffi::Error::Success();
  if (blocks > INT32_MAX) return Invalid(where, "problem too large");
  return DispatchRows(rows, [&](auto r) {
    return cuda_ffi_util::Launch(where, "kernel launch", kernel_for(r), dim3(static_cast<unsigned>(blocks)),
                                 dim3(kThreads), shared, stream, args);
  });
}

ffi::Error DeltaRuleFwdImpl(cudaStream_t stream, ffi::AnyBuffer q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                            ffi::AnyBuffer beta, ffi::AnyBuffer h0, int64_t chunk, ffi::Result<ffi::AnyBuffer> o,
                            ffi::Result<ffi::AnyBuffer> last, ffi::Result<ffi::AnyBuffer> chunk_states) {
  DeltaDims in;
  FFI_RETURN_IF_ERROR(delta_rule::CheckInputs(kFwdName, q, k, v, beta, chunk, &in));
  const auto t = q.element_type();
  FFI_RETURN_IF_ERROR(delta_rule::CheckForward(kFwdName, in, t, h0, *o, *last, *chunk_states));
  Dims d;
  int64_t rows = 0;
  FFI_RETURN_IF_ERROR(KernelDims(kFwdName, in, &d, &rows));
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) {
    using T = decltype(tag);
    const FwdArgs<T> args{{In<T>(q), In<T>(k), In<T>(v), In<T>(beta), In<float>(h0), Out<T>(o), Out<float>(last),
                           Out<float>(chunk_states)},
                          d};
    return Launch(kFwdName, args, rows, sizeof(float) * SharedFloats(d, 2, 1), stream,
                  [](auto r) { return &DeltaRuleFwdKernel<T, decltype(r)::value>; });
  });
}

ffi::Error DeltaRuleBwdImpl(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer q, ffi::AnyBuffer k,
                            ffi::AnyBuffer v, ffi::AnyBuffer beta, ffi::AnyBuffer chunk_states, ffi::AnyBuffer dout,
                            ffi::AnyBuffer dlast, int64_t chunk, ffi::Result<ffi::AnyBuffer> dq,
                            ffi::Result<ffi::AnyBuffer> dk, ffi::Result<ffi::AnyBuffer> dv,
                            ffi::Result<ffi::AnyBuffer> dbeta, ffi::Result<ffi::AnyBuffer> dh0) {
  DeltaDims in;
  FFI_RETURN_IF_ERROR(delta_rule::CheckInputs(kBwdName, q, k, v, beta, chunk, &in));
  const auto t = q.element_type();
  FFI_RETURN_IF_ERROR(delta_rule::CheckBackward(kBwdName, in, t, chunk_states, dout, dlast, *dq, *dk, *dv, *dbeta, *dh0));
  Dims d;
  int64_t rows = 0;
  FFI_RETURN_IF_ERROR(KernelDims(kBwdName, in, &d, &rows));
  if (d.batch * d.heads == 0) return ffi::Error::Success();
  const size_t bytes = sizeof(float) * static_cast<size_t>(d.batch * d.heads * std::min(d.chunk, d.length) * d.cols);
  std::optional<void*> history = scratch.Allocate(bytes, 256);
  if (!history.has_value()) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      std::string(kBwdName) + ": cannot allocate " + std::to_string(bytes) + " bytes of scratch");
  }
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) {
    using T = decltype(tag);
    const BwdArgs<T> args{{In<T>(q), In<T>(k), In<T>(v), In<T>(beta), In<float>(chunk_states), In<T>(dout),
                           In<float>(dlast), Out<T>(dq), Out<T>(dk), Out<T>(dv), Out<T>(dbeta), Out<float>(dh0)},
                          static_cast<float*>(*history),
                          d};
    return Launch(kBwdName, args, rows, sizeof(float) * SharedFloats(d, 4, 2), stream,
                  [](auto r) { return &DeltaRuleBwdKernel<T, decltype(r)::value>; });
  });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DeltaRuleFwdCuda, DeltaRuleFwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // q [..., L, H, K]
                                  .Arg<ffi::AnyBuffer>()  // k [..., L, H, K]
                                  .Arg<ffi::AnyBuffer>()  // v [..., L, H, V]
                                  .Arg<ffi::AnyBuffer>()  // beta [..., L, H]
                                  .Arg<ffi::AnyBuffer>()  // initial_state [..., H, K, V] f32
                                  .Attr<int64_t>("chunk")
                                  .Ret<ffi::AnyBuffer>()   // o [..., L, H, V]
                                  .Ret<ffi::AnyBuffer>()   // last_state [..., H, K, V] f32
                                  .Ret<ffi::AnyBuffer>());  // chunk_states [..., nc, H, K, V] f32

XLA_FFI_DEFINE_HANDLER_SYMBOL(DeltaRuleBwdCuda, DeltaRuleBwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Arg<ffi::AnyBuffer>()  // q
                                  .Arg<ffi::AnyBuffer>()  // k
                                  .Arg<ffi::AnyBuffer>()  // v
                                  .Arg<ffi::AnyBuffer>()  // beta
                                  .Arg<ffi::AnyBuffer>()  // chunk_states [..., nc, H, K, V] f32
                                  .Arg<ffi::AnyBuffer>()  // dout [..., L, H, V]
                                  .Arg<ffi::AnyBuffer>()  // dlast [..., H, K, V] f32
                                  .Attr<int64_t>("chunk")
                                  .Ret<ffi::AnyBuffer>()   // dq
                                  .Ret<ffi::AnyBuffer>()   // dk
                                  .Ret<ffi::AnyBuffer>()   // dv
                                  .Ret<ffi::AnyBuffer>()   // dbeta
                                  .Ret<ffi::AnyBuffer>());  // dinitial_state [..., H, K, V] f32
