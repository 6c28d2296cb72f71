// Calling a CUDA handler's implementation (the *Impl functions of xla_ffi/csrc/*_cuda.cu) on
// the emulated device: operands as XLA FFI buffers over host arrays read from raw float32
// files, and an ffi::ScratchAllocator whose device memory is NaN-filled host memory.
//
// Usage of every driver: the last argument is DIR, the folder of the raw files; runtime calls
// are logged to DIR/launches.txt; a handler error is printed as "handler error: <message>" and
// exits with status 3.

#ifndef TESTS_XLA_FFI_CUDA_EMULATION_EMU_FFI_H_
#define TESTS_XLA_FFI_CUDA_EMULATION_EMU_FFI_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "emu_runtime.h"
#include "xla/ffi/api/ffi.h"

namespace emu {

namespace ffi = xla::ffi;

inline std::string g_dir;  // the folder of the raw files

inline std::vector<float> Read(const std::string& name, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(g_dir + "/" + name + ".bin", std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (static_cast<size_t>(f.gcount()) != count * sizeof(float)) Fail("%s.bin: expected %zu floats", name.c_str(), count);
  return v;
}

// A host array seen by the handler as a device buffer of float32 or bfloat16.
class Array {
 public:
  // NaN-filled (an output the kernels must write).
  Array(bool bf16, std::vector<int64_t> dims) : bf16_(bf16), dims_(std::move(dims)) {
    size_t n = 1;
    for (int64_t d : dims_) n *= static_cast<size_t>(d);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (bf16_) b16_.assign(n, __float2bfloat16(nan)); else f32_.assign(n, nan);
    raw_ = XLA_FFI_Buffer{XLA_FFI_Buffer_STRUCT_SIZE, nullptr,
                          bf16_ ? XLA_FFI_DataType_BF16 : XLA_FFI_DataType_F32,
                          bf16_ ? static_cast<void*>(b16_.data()) : static_cast<void*>(f32_.data()),
                          static_cast<int64_t>(dims_.size()), dims_.data()};
  }

  // NAME.bin from DIR, rounded to bfloat16 for a bf16 array.
  static Array Load(const std::string& name, bool bf16, std::vector<int64_t> dims) {
    Array a(bf16, std::move(dims));
    const std::vector<float> v = Read(name, a.size());
    for (size_t i = 0; i < v.size(); ++i) a.Set(i, v[i]);
    return a;
  }

  Array(const Array&) = delete;
  Array(Array&& other) noexcept = default;

  size_t size() const { return bf16_ ? b16_.size() : f32_.size(); }
  void Set(size_t i, float v) { bf16_ ? void(b16_[i] = __float2bfloat16(v)) : void(f32_[i] = v); }
  float Get(size_t i) const { return bf16_ ? __bfloat162float(b16_[i]) : f32_[i]; }
  ffi::AnyBuffer buffer() const { return ffi::AnyBuffer(&raw_); }
  ffi::Result<ffi::AnyBuffer> result() const { return ffi::Result<ffi::AnyBuffer>(buffer()); }

  void Save(const std::string& name) const {
    std::vector<float> v(size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = Get(i);
    std::ofstream f(g_dir + "/" + name + ".bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  }

 private:
  bool bf16_;
  std::vector<int64_t> dims_;
  std::vector<float> f32_;
  std::vector<__nv_bfloat16> b16_;
  XLA_FFI_Buffer raw_;
};

inline XLA_FFI_Error* AllocateScratch(XLA_FFI_DeviceMemory_Allocate_Args* args) {
  Log("scratch %zu", args->size);
  const size_t alignment = std::max<size_t>(args->alignment, alignof(float));
  const size_t bytes = (args->size + alignment - 1) / alignment * alignment;
  args->data = std::aligned_alloc(alignment, bytes == 0 ? alignment : bytes);
  const uint32_t poison = 0x7fbadbadu;  // NaN: a read of scratch nobody wrote shows
  for (size_t i = 0; i + sizeof poison <= bytes; i += sizeof poison) {
    std::memcpy(static_cast<char*>(args->data) + i, &poison, sizeof poison);
  }
  return nullptr;
}

inline XLA_FFI_Error* FreeScratch(XLA_FFI_DeviceMemory_Free_Args* args) {
  std::free(args->data);
  return nullptr;
}

// The FFI API a ScratchAllocator talks to: device memory only.
inline const XLA_FFI_Api* ScratchApi() {
  static const XLA_FFI_Api api = [] {
    XLA_FFI_Api a{};
    a.XLA_FFI_DeviceMemory_Allocate = &AllocateScratch;
    a.XLA_FFI_DeviceMemory_Free = &FreeScratch;
    return a;
  }();
  return &api;
}

inline ffi::ScratchAllocator Scratch(ffi::DiagnosticEngine& diagnostic) {
  return *ffi::CtxDecoding<ffi::ScratchAllocator>::Decode(ScratchApi(), nullptr, diagnostic);
}

inline cudaStream_t Stream() { return nullptr; }

// Exits with status 3 printing the handler's error, if any.
inline void Check(const ffi::Error& error) {
  if (error.success()) return;
  std::fprintf(stderr, "handler error: %s\n", error.message().c_str());
  std::exit(3);
}

// Points the runtime's log at DIR/launches.txt (emptied).
inline void UseDir(const char* dir) {
  g_dir = dir;
  g_log_path = g_dir + "/launches.txt";
  std::ofstream(g_log_path, std::ios::trunc);
}

}  // namespace emu

#endif  // TESTS_XLA_FFI_CUDA_EMULATION_EMU_FFI_H_
