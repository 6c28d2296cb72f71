// Operand validation shared by every handler, CPU and CUDA: each check returns an
// ffi::Error naming the target and the operand instead of crashing.
#ifndef XLA_FFI_CSRC_FFI_CHECKS_H_
#define XLA_FFI_CSRC_FFI_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "xla/ffi/api/ffi.h"

// Returns from the enclosing function when `expr` (an ffi::Error) is a failure.
#define FFI_RETURN_IF_ERROR(expr)    \
  do {                               \
    ::xla::ffi::Error err_ = (expr); \
    if (err_.failure()) return err_; \
  } while (0)

namespace ffi_checks {

namespace ffi = xla::ffi;

template <typename Dims>
std::string ShapeString(const Dims& dims) {
  std::string s = "(";
  size_t i = 0;
  for (int64_t d : dims) s += (i++ ? ", " : "") + std::to_string(d);
  return s + (i == 1 ? ",)" : ")");
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

inline ffi::Error Invalid(const char* target, const std::string& message) {
  return ffi::Error::InvalidArgument(std::string(target) + ": " + message);
}

// InvalidArgument unless `buf` has exactly `dtype` and `shape`; the message names the operand.
template <typename Shape>
ffi::Error CheckOperandShape(const char* target, const char* name, const ffi::AnyBuffer& buf,
                             ffi::DataType dtype, const Shape& shape) {
  const auto dims = buf.dimensions();
  bool ok = dims.size() == shape.size();
  size_t i = 0;
  for (int64_t s : shape) {
    ok = ok && dims[i++] == s;
  }
  if (!ok) {
    return Invalid(target, std::string(name) + " must have shape " + ShapeString(shape) + ", got " +
                               ShapeString(dims));
  }
  if (buf.element_type() != dtype) {
    return Invalid(target, std::string(name) + " must be " + DtypeName(dtype) + ", got " +
                               DtypeName(buf.element_type()));
  }
  return ffi::Error::Success();
}

inline ffi::Error CheckOperand(const char* target, const char* name, const ffi::AnyBuffer& buf,
                               ffi::DataType dtype, std::initializer_list<int64_t> shape) {
  return CheckOperandShape(target, name, buf, dtype, shape);
}

// `lead` followed by `tail`: the shape of an operand that carries the call's leading batch dims.
inline std::vector<int64_t> WithLead(const std::vector<int64_t>& lead, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> shape(lead);
  shape.insert(shape.end(), tail.begin(), tail.end());
  return shape;
}

// InvalidArgument unless `t` is float32 or bfloat16 (the storage types every kernel takes).
inline ffi::Error CheckFloatType(const char* target, const char* name, ffi::DataType t) {
  if (t == ffi::DataType::F32 || t == ffi::DataType::BF16) return ffi::Error::Success();
  return Invalid(target, std::string(name) + " must be float32 or bfloat16, got " + DtypeName(t));
}

// One expected operand: its name, buffer, dtype and shape (CheckAll walks a list of them).
struct Expect {
  const char* name;
  const ffi::AnyBuffer& buf;
  ffi::DataType dtype;
  std::initializer_list<int64_t> shape;
};

// The checks of `expected`, in order; the first failure.
template <size_t N>
ffi::Error CheckAll(const char* target, const Expect (&expected)[N]) {
  for (const Expect& x : expected) FFI_RETURN_IF_ERROR(CheckOperand(target, x.name, x.buf, x.dtype, x.shape));
  return ffi::Error::Success();
}

// Typed views of operand and result buffers (after their dtype is checked).
template <typename T>
const T* In(const ffi::AnyBuffer& buf) {
  return static_cast<const T*>(buf.untyped_data());
}
template <typename T>
T* Out(ffi::Result<ffi::AnyBuffer>& buf) {
  return static_cast<T*>(buf->untyped_data());
}

}  // namespace ffi_checks

#endif  // XLA_FFI_CSRC_FFI_CHECKS_H_
