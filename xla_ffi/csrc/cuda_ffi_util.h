// Host-side helpers shared by the CUDA handlers: CUDA errors as ffi::Error, kernel launches
// (with the shared-memory opt-in), stream-ordered zeroing of accumulated outputs, budget
// overrides from the environment, and the dtype dispatch. Runtime API calls only, so the test
// suite compiles the handlers for the host against a stand-in runtime (tests/xla_ffi/cuda_emulation/).
#ifndef XLA_FFI_CSRC_CUDA_FFI_UTIL_H_
#define XLA_FFI_CSRC_CUDA_FFI_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>

#include "xla/ffi/api/ffi.h"

namespace cuda_ffi_util {

namespace ffi = xla::ffi;

// Internal error naming `where` and `what` if the last CUDA call (a kernel launch) failed.
inline ffi::Error CudaError(const char* where, const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": " + what + " failed: " + cudaGetErrorString(err));
}

// Dynamic shared memory a block may use without opting in (every architecture since sm_20).
constexpr size_t kDefaultSharedBytes = 48 << 10;

// Opts `kernel` in to `shared` bytes of dynamic shared memory when that is past the default;
// InvalidArgument naming `where` when it is past the device's limit (the shape is too large).
template <typename Kernel>
ffi::Error OptInShared(const char* where, Kernel kernel, size_t shared) {
  if (shared <= kDefaultSharedBytes) return ffi::Error::Success();
  int device = 0, limit = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    return CudaError(where, "querying the shared-memory limit");
  }
  if (shared > static_cast<size_t>(limit)) {
    return ffi::Error::InvalidArgument(std::string(where) + ": the shape needs " + std::to_string(shared) +
                                       " bytes of shared memory a block, the device allows " +
                                       std::to_string(limit));
  }
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)) !=
      cudaSuccess) {
    return CudaError(where, "opting in to shared memory");
  }
  return ffi::Error::Success();
}

// Launches kernel<<<grid, block, shared, stream>>>(args...) through cudaLaunchKernel (each
// argument converted to its parameter's type), opting in to the shared memory first; an
// Internal error naming `where` and `what` if the launch fails.
template <typename... Params, typename... Args>
ffi::Error Launch(const char* where, const char* what, void (*kernel)(Params...), dim3 grid, dim3 block,
                  size_t shared, cudaStream_t stream, const Args&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "one argument per kernel parameter");
  ffi::Error opt_in = OptInShared(where, kernel, shared);
  if (opt_in.failure()) return opt_in;
  std::tuple<Params...> values(args...);
  std::apply(
      [&](auto&... v) {
        void* pointers[] = {static_cast<void*>(&v)...};
        (void)cudaLaunchKernel(kernel, grid, block, pointers, shared, stream);  // reported below
      },
      values);
  return CudaError(where, what);
}

// A positive integer from the environment variable `name`, or `fallback` when it is unset or
// empty: the handlers' budget overrides, so that tests reach the paths past a budget at small
// shapes. Anything else is an InvalidArgument error naming `where` and the variable.
inline ffi::Error EnvLimit(const char* where, const char* name, int64_t fallback, int64_t* out) {
  const char* text = std::getenv(name);
  *out = fallback;
  if (text == nullptr || text[0] == '\0') return ffi::Error::Success();
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < 1) {
    return ffi::Error::InvalidArgument(std::string(where) + ": " + name + "=" + text + " is not a positive integer");
  }
  *out = value;
  return ffi::Error::Success();
}

// Zeroes `bytes` bytes at `data` on `stream` (an output the kernel accumulates into).
inline ffi::Error Memset(const char* where, const char* name, void* data, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return ffi::Error::Success();
  const cudaError_t err = cudaMemsetAsync(data, 0, bytes, stream);
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": zeroing " + name + " failed: " +
                              cudaGetErrorString(err));
}

// Calls run(float{}) or run(__nv_bfloat16{}) for a buffer's storage type `t` (checked
// beforehand to be float32 or bfloat16): the handlers' dtype dispatch.
template <typename Run>
ffi::Error DispatchStorage(ffi::DataType t, Run&& run) {
  return t == ffi::DataType::F32 ? run(float{}) : run(__nv_bfloat16{});
}

}  // namespace cuda_ffi_util

#endif  // XLA_FFI_CSRC_CUDA_FFI_UTIL_H_
