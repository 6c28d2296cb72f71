// Host-side helpers shared by the CUDA handlers: CUDA errors as ffi::Error, stream-ordered
// zeroing of accumulated outputs, and the dtype dispatch.
#ifndef XLA_FFI_CSRC_CUDA_FFI_UTIL_H_
#define XLA_FFI_CSRC_CUDA_FFI_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace cuda_ffi_util {

namespace ffi = xla::ffi;

// Internal error naming `where` and `what` if the last CUDA call (a kernel launch) failed.
inline ffi::Error CudaError(const char* where, const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string(where) + ": " + what + " failed: " + cudaGetErrorString(err));
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
