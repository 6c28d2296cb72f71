// Declarations shared by the CPU and CUDA selective-scan handlers (see the FFI contract in
// xla_ffi/ffi.py and shared/docs): problem dimensions, operand validation that returns
// ffi::Error instead of crashing.
#ifndef XLA_FFI_SELECTIVE_SCAN_COMMON_H_
#define XLA_FFI_SELECTIVE_SCAN_COMMON_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace selective_scan {

namespace ffi = xla::ffi;

// Problem size of one call. Layout is channels-last: u, delta, z [batch, length, channels];
// A [channels, state]; Bm, Cm [batch, length, state]; states [batch, (nchunks,) channels, state].
struct ScanDims {
  int64_t batch = 0;
  int64_t length = 0;
  int64_t channels = 0;
  int64_t state = 0;
  int64_t chunk = 0;    // steps between saved chunk-boundary states
  int64_t nchunks = 0;  // ceil(length / chunk), at least 1
  bool has_z = false;
  bool softplus = false;
};

// Number of chunk-boundary states saved for `length` steps (matches xla_ffi.ffi.num_chunks).
inline int64_t NumChunks(int64_t length, int64_t chunk) {
  const int64_t n = (length + chunk - 1) / chunk;
  return n < 1 ? 1 : n;
}

inline std::string ShapeString(ffi::Span<const int64_t> dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

inline const char* DtypeName(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::F32: return "float32";
    case ffi::DataType::BF16: return "bfloat16";
    case ffi::DataType::F16: return "float16";
    case ffi::DataType::F64: return "float64";
    default: return "unsupported dtype";
  }
}

// InvalidArgument unless `buf` has exactly `dtype` and `shape`; the message names the operand.
inline ffi::Error CheckOperand(const char* target, const char* name, const ffi::AnyBuffer& buf,
                               ffi::DataType dtype, std::initializer_list<int64_t> shape) {
  const auto dims = buf.dimensions();
  bool ok = dims.size() == shape.size();
  size_t i = 0;
  for (int64_t s : shape) {
    ok = ok && dims[i++] == s;
  }
  if (!ok) {
    std::string want = "(";
    i = 0;
    for (int64_t s : shape) want += (i++ ? ", " : "") + std::to_string(s);
    want += shape.size() == 1 ? ",)" : ")";
    return ffi::Error::InvalidArgument(std::string(target) + ": " + name + " must have shape " + want +
                                       ", got " + ShapeString(dims));
  }
  if (buf.element_type() != dtype) {
    return ffi::Error::InvalidArgument(std::string(target) + ": " + name + " must be " +
                                       DtypeName(dtype) + ", got " + DtypeName(buf.element_type()));
  }
  return ffi::Error::Success();
}

// Validates the eight forward operands and attributes; fills `dims` on success.
inline ffi::Error CheckForwardOperands(const char* target, const ffi::AnyBuffer& u,
                                       const ffi::AnyBuffer& delta, const ffi::AnyBuffer& A,
                                       const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                                       const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                                       const ffi::AnyBuffer& delta_bias, bool softplus, bool has_z,
                                       int64_t chunk, ScanDims* dims) {
  const auto ud = u.dimensions();
  const auto ad = A.dimensions();
  if (ud.size() != 3) {
    return ffi::Error::InvalidArgument(std::string(target) +
                                       ": u must have shape (batch, length, channels), got " +
                                       ShapeString(ud));
  }
  if (ad.size() != 2) {
    return ffi::Error::InvalidArgument(std::string(target) +
                                       ": A must have shape (channels, state), got " + ShapeString(ad));
  }
  const ffi::DataType t = u.element_type();
  if (t != ffi::DataType::F32 && t != ffi::DataType::BF16) {
    return ffi::Error::InvalidArgument(std::string(target) + ": u must be float32 or bfloat16, got " +
                                       DtypeName(t));
  }
  if (chunk < 1) {
    return ffi::Error::InvalidArgument(std::string(target) + ": chunk must be >= 1, got " +
                                       std::to_string(chunk));
  }
  ScanDims d;
  d.batch = ud[0];
  d.length = ud[1];
  d.channels = ud[2];
  d.state = ad[1];
  d.chunk = chunk;
  d.nchunks = NumChunks(d.length, chunk);
  d.has_z = has_z;
  d.softplus = softplus;
  const auto F32 = ffi::DataType::F32;
  if (auto e = CheckOperand(target, "delta", delta, t, {d.batch, d.length, d.channels}); e.failure()) return e;
  if (auto e = CheckOperand(target, "A", A, F32, {d.channels, d.state}); e.failure()) return e;
  if (auto e = CheckOperand(target, "Bm", Bm, t, {d.batch, d.length, d.state}); e.failure()) return e;
  if (auto e = CheckOperand(target, "Cm", Cm, t, {d.batch, d.length, d.state}); e.failure()) return e;
  if (auto e = CheckOperand(target, "Dskip", Dskip, F32, {d.channels}); e.failure()) return e;
  if (has_z) {
    if (auto e = CheckOperand(target, "z", z, t, {d.batch, d.length, d.channels}); e.failure()) return e;
  } else if (auto e = CheckOperand(target, "z", z, t, {0}); e.failure()) {
    return e;
  }
  if (auto e = CheckOperand(target, "delta_bias", delta_bias, F32, {d.channels}); e.failure()) return e;
  *dims = d;
  return ffi::Error::Success();
}

}  // namespace selective_scan

#endif  // XLA_FFI_SELECTIVE_SCAN_COMMON_H_
