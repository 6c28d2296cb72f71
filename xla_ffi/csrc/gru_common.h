// Declarations shared by the CPU and CUDA GRU-recurrence handlers (see the FFI contract in
// xla_ffi/gru.py): problem dimensions and the validation of the inputs, which returns
// ffi::Error instead of crashing.
//
// The recurrence (input projection computed outside, gates ordered r, z, n):
//   gh = h W + b;  r = sigmoid(gx_r + gh_r);  z = sigmoid(gx_z + gh_z);
//   n = tanh(gx_n + r gh_n);  h' = (1 - z) n + z h.
#ifndef XLA_FFI_CSRC_GRU_COMMON_H_
#define XLA_FFI_CSRC_GRU_COMMON_H_

#include <cstdint>
#include <string>

#include "ffi_checks.h"
#include "xla/ffi/api/ffi.h"

namespace gru {

namespace ffi = xla::ffi;
using ffi_checks::CheckOperand;
using ffi_checks::Invalid;

// Problem size of one call: gx [batch, length, 3 hidden]; W [hidden, 3 hidden]; h [batch, hidden].
struct GruDims {
  int64_t batch = 0, length = 0, hidden = 0;
};

// Validates the forward inputs gx, h0, W [hidden, 3 hidden] and b; fills `dims` on success.
inline ffi::Error CheckInputs(const char* target, const ffi::AnyBuffer& gx, const ffi::AnyBuffer& h0,
                              const ffi::AnyBuffer& W, const ffi::AnyBuffer& b, GruDims* dims) {
  const auto gd = gx.dimensions();
  const auto wd = W.dimensions();
  if (gd.size() != 3) {
    return Invalid(target, "gx must have shape (batch, length, 3 * hidden), got " + ffi_checks::ShapeString(gd));
  }
  if (wd.size() != 2) return Invalid(target, "W must be a matrix, got shape " + ffi_checks::ShapeString(wd));
  FFI_RETURN_IF_ERROR(ffi_checks::CheckFloatType(target, "gx", gx.element_type()));
  GruDims d{gd[0], gd[1], wd[0]};
  if (d.hidden < 1) return Invalid(target, "hidden must be >= 1, got " + std::to_string(d.hidden));
  const auto F32 = ffi::DataType::F32;
  const int64_t H = d.hidden;
  FFI_RETURN_IF_ERROR(CheckOperand(target, "gx", gx, gx.element_type(), {d.batch, d.length, 3 * H}));
  FFI_RETURN_IF_ERROR(CheckOperand(target, "h0", h0, F32, {d.batch, H}));
  FFI_RETURN_IF_ERROR(CheckOperand(target, "W", W, F32, {H, 3 * H}));
  FFI_RETURN_IF_ERROR(CheckOperand(target, "b", b, F32, {3 * H}));
  *dims = d;
  return ffi::Error::Success();
}

}  // namespace gru

#endif  // XLA_FFI_CSRC_GRU_COMMON_H_
