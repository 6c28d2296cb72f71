// GRU recurrence forward and backward as XLA FFI handlers for CUDA (sm_90): GruFwdCuda and
// GruBwdCuda. The step kernels live in gru_cuda_fwd.cuh and gru_cuda_bwd.cuh; this file
// validates operands (gru_common.h), takes the float32 h / carry buffers from the FFI scratch
// allocator, launches the step kernels in order on the FFI stream and checks each launch.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "cuda_ffi_util.h"
#include "gru_common.h"
#include "gru_cuda_bwd.cuh"
#include "gru_cuda_fwd.cuh"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary
using namespace gru_cuda;  // NOLINT(build/namespaces): this file is its front end

// The backward's gate kernel strides over the [B, H] units with at most kMaxGateBlocks blocks
// (override: this variable, so that a small test reaches the strided path).
constexpr int64_t kMaxGateBlocks = 4096;
constexpr const char* kGateBlocksEnv = "XLA_FFI_GRU_CUDA_GATE_BLOCKS";

constexpr const char* kFwdName = "gru_fwd (CUDA)";
constexpr const char* kBwdName = "gru_bwd (CUDA)";

// `count` [B, H] float32 buffers from the scratch allocator.
ffi::Error StateBuffers(const char* where, ffi::ScratchAllocator& scratch, const Dims& d, int count, float** out) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(d.batch * d.hidden) * count;
  std::optional<void*> mem = scratch.Allocate(std::max<size_t>(bytes, 256), 256);
  if (!mem.has_value()) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      std::string(where) + ": cannot allocate " + std::to_string(bytes) + " bytes of scratch");
  }
  *out = static_cast<float*>(*mem);
  return ffi::Error::Success();
}

ffi::Error Copy(const char* where, float* dst, const float* src, const Dims& d, cudaStream_t stream) {
  const cudaError_t err = cudaMemcpyAsync(dst, src, sizeof(float) * d.batch * d.hidden, cudaMemcpyDeviceToDevice,
                                          stream);
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": copy failed: " + cudaGetErrorString(err));
}

ffi::Error GruFwdImpl(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer gx, ffi::AnyBuffer h0,
                      ffi::AnyBuffer W, ffi::AnyBuffer b, bool save_gates, ffi::Result<ffi::AnyBuffer> y,
                      ffi::Result<ffi::AnyBuffer> last, ffi::Result<ffi::AnyBuffer> gates) {
  gru::GruDims in;
  FFI_RETURN_IF_ERROR(gru::CheckInputs(kFwdName, gx, h0, W, b, &in));
  const auto t = gx.element_type();
  const auto F32 = ffi::DataType::F32;
  const int64_t B = in.batch, L = in.length, H = in.hidden;
  const Expect expected[] = {
      {"y", *y, t, {B, L, H}},
      {"last_state", *last, F32, {B, H}},
      {"gates", *gates, F32, {save_gates ? B : 0, L, 4 * H}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kFwdName, expected));
  const Dims d{B, L, H};
  if (B == 0) return ffi::Error::Success();
  float* h = nullptr;
  FFI_RETURN_IF_ERROR(StateBuffers(kFwdName, scratch, d, 2, &h));
  FFI_RETURN_IF_ERROR(Copy(kFwdName, h, In<float>(h0), d, stream));
  const dim3 grid(static_cast<unsigned>(RowTiles(d)), static_cast<unsigned>(UnitTiles(d)));
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) -> ffi::Error {
    using T = decltype(tag);
    FwdArgs<T> args{In<T>(gx), In<float>(W), In<float>(b), h, h + B * H, Out<T>(y),
                    save_gates ? Out<float>(gates) : nullptr, d};
    for (int64_t step = 0; step < L; ++step) {
      args.h = h + (step % 2) * B * H;
      args.next = h + ((step + 1) % 2) * B * H;
      FFI_RETURN_IF_ERROR(cuda_ffi_util::Launch(kFwdName, "kernel launch", &GruFwdStepKernel<T>, grid,
                                                dim3(kThreads), FwdSharedBytes(), stream, args, step));
    }
    return Copy(kFwdName, Out<float>(last), h + (L % 2) * B * H, d, stream);
  });
}

ffi::Error GruBwdImpl(cudaStream_t stream, ffi::ScratchAllocator scratch, ffi::AnyBuffer Wt, ffi::AnyBuffer h0,
                      ffi::AnyBuffer y, ffi::AnyBuffer gates, ffi::AnyBuffer dy, ffi::AnyBuffer dlast,
                      ffi::Result<ffi::AnyBuffer> dgx, ffi::Result<ffi::AnyBuffer> dgh,
                      ffi::Result<ffi::AnyBuffer> dh0) {
  const auto yd = y.dimensions();
  if (yd.size() != 3) {
    return ffi_checks::Invalid(kBwdName, "y must have shape (batch, length, hidden), got " + ffi_checks::ShapeString(yd));
  }
  const auto t = y.element_type();
  FFI_RETURN_IF_ERROR(ffi_checks::CheckFloatType(kBwdName, "y", t));
  const auto F32 = ffi::DataType::F32;
  const int64_t B = yd[0], L = yd[1], H = yd[2];
  const Expect expected[] = {
      {"W^T", Wt, F32, {3 * H, H}},       {"h0", h0, F32, {B, H}},       {"gates", gates, F32, {B, L, 4 * H}},
      {"dy", dy, t, {B, L, H}},           {"dlast", dlast, F32, {B, H}}, {"dgx", *dgx, t, {B, L, 3 * H}},
      {"dgh", *dgh, F32, {B, L, 3 * H}}, {"dh0", *dh0, F32, {B, H}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kBwdName, expected));
  const Dims d{B, L, H};
  if (B == 0 || H == 0) return ffi::Error::Success();
  float* buf = nullptr;
  FFI_RETURN_IF_ERROR(StateBuffers(kBwdName, scratch, d, 3, &buf));  // carry x 2, dh z
  FFI_RETURN_IF_ERROR(Copy(kBwdName, buf, In<float>(dlast), d, stream));
  const dim3 grid(static_cast<unsigned>(RowTiles(d)), static_cast<unsigned>(UnitTiles(d)));
  int64_t max_gate_blocks = 0;
  FFI_RETURN_IF_ERROR(cuda_ffi_util::EnvLimit(kBwdName, kGateBlocksEnv, kMaxGateBlocks, &max_gate_blocks));
  const unsigned gate_blocks =
      static_cast<unsigned>(std::min<int64_t>((B * H + kThreads - 1) / kThreads, max_gate_blocks));
  return cuda_ffi_util::DispatchStorage(t, [&](auto tag) -> ffi::Error {
    using T = decltype(tag);
    BwdArgs<T> args{In<float>(Wt), In<float>(h0), In<T>(y),  In<float>(gates), In<T>(dy),
                    Out<T>(dgx),   Out<float>(dgh), buf,      buf + 2 * B * H,  buf + B * H, d};
    for (int64_t step = L - 1, i = 0; step >= 0; --step, ++i) {
      args.carry = buf + (i % 2) * B * H;
      args.next = buf + ((i + 1) % 2) * B * H;
      FFI_RETURN_IF_ERROR(cuda_ffi_util::Launch(kBwdName, "gates kernel launch", &GruBwdGatesKernel<T>,
                                                dim3(gate_blocks), dim3(kThreads), 0, stream, args, step));
      FFI_RETURN_IF_ERROR(cuda_ffi_util::Launch(kBwdName, "carry kernel launch", &GruBwdCarryKernel<T>, grid,
                                                dim3(kThreads), BwdSharedBytes(), stream, args, step));
    }
    return Copy(kBwdName, Out<float>(dh0), buf + (L % 2) * B * H, d, stream);
  });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(GruFwdCuda, GruFwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Arg<ffi::AnyBuffer>()  // gx [B, L, 3H]
                                  .Arg<ffi::AnyBuffer>()  // h0 [B, H] f32
                                  .Arg<ffi::AnyBuffer>()  // W [H, 3H] f32
                                  .Arg<ffi::AnyBuffer>()  // b [3H] f32
                                  .Attr<bool>("save_gates")
                                  .Ret<ffi::AnyBuffer>()   // y [B, L, H]
                                  .Ret<ffi::AnyBuffer>()   // last_state [B, H] f32
                                  .Ret<ffi::AnyBuffer>());  // gates [B or 0, L, 4H] f32

XLA_FFI_DEFINE_HANDLER_SYMBOL(GruBwdCuda, GruBwdImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::ScratchAllocator>()
                                  .Arg<ffi::AnyBuffer>()  // W^T [3H, H] f32
                                  .Arg<ffi::AnyBuffer>()  // h0 [B, H] f32
                                  .Arg<ffi::AnyBuffer>()  // y [B, L, H]
                                  .Arg<ffi::AnyBuffer>()  // gates [B, L, 4H] f32
                                  .Arg<ffi::AnyBuffer>()  // dy [B, L, H]
                                  .Arg<ffi::AnyBuffer>()  // dlast [B, H] f32
                                  .Ret<ffi::AnyBuffer>()   // dgx [B, L, 3H]
                                  .Ret<ffi::AnyBuffer>()   // dgh [B, L, 3H] f32
                                  .Ret<ffi::AnyBuffer>());  // dh0 [B, H] f32
