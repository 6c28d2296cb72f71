// Declarations shared by the CPU and CUDA selective-scan handlers (see the FFI contract in
// xla_ffi/api.py): problem dimensions and the forward operands' validation,
// which returns ffi::Error instead of crashing.
#ifndef XLA_FFI_SELECTIVE_SCAN_COMMON_H_
#define XLA_FFI_SELECTIVE_SCAN_COMMON_H_

#include <cstdint>
#include <string>

#include "ffi_checks.h"
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

// Number of chunk-boundary states saved for `length` steps (matches xla_ffi.api.num_chunks).
inline int64_t NumChunks(int64_t length, int64_t chunk) {
  const int64_t n = (length + chunk - 1) / chunk;
  return n < 1 ? 1 : n;
}

using ffi_checks::CheckFloatType;
using ffi_checks::CheckOperand;
using ffi_checks::Invalid;
using ffi_checks::ShapeString;

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
    return Invalid(target, "u must have shape (batch, length, channels), got " + ShapeString(ud));
  }
  if (ad.size() != 2) return Invalid(target, "A must have shape (channels, state), got " + ShapeString(ad));
  const ffi::DataType t = u.element_type();
  FFI_RETURN_IF_ERROR(CheckFloatType(target, "u", t));
  if (chunk < 1) return Invalid(target, "chunk must be >= 1, got " + std::to_string(chunk));
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
  const ffi_checks::Expect expected[] = {
      {"delta", delta, t, {d.batch, d.length, d.channels}},
      {"A", A, F32, {d.channels, d.state}},
      {"Bm", Bm, t, {d.batch, d.length, d.state}},
      {"Cm", Cm, t, {d.batch, d.length, d.state}},
      {"Dskip", Dskip, F32, {d.channels}},
  };
  FFI_RETURN_IF_ERROR(ffi_checks::CheckAll(target, expected));
  if (has_z) {
    FFI_RETURN_IF_ERROR(CheckOperand(target, "z", z, t, {d.batch, d.length, d.channels}));
  } else {
    FFI_RETURN_IF_ERROR(CheckOperand(target, "z", z, t, {0}));
  }
  FFI_RETURN_IF_ERROR(CheckOperand(target, "delta_bias", delta_bias, F32, {d.channels}));
  *dims = d;
  return ffi::Error::Success();
}

}  // namespace selective_scan

#endif  // XLA_FFI_SELECTIVE_SCAN_COMMON_H_
