// Declarations shared by the CPU and CUDA delta-rule handlers (see the FFI contract in
// xla_ffi/deltanet.py): problem dimensions, memory offsets, and the validation of the inputs,
// which returns ffi::Error instead of crashing.
//
// Every operand may carry extra leading batch dims (vmap with "broadcast_all" prepends them):
// q, k [..., L, H, K]; v [..., L, H, V]; beta [..., L, H]; states [..., (nchunks,) H, K, V].
// The leading dims are flattened into one batch of independent sequences.
#ifndef XLA_FFI_CSRC_DELTA_RULE_COMMON_H_
#define XLA_FFI_CSRC_DELTA_RULE_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ffi_checks.h"
#include "xla/ffi/api/ffi.h"

namespace delta_rule {

namespace ffi = xla::ffi;
using ffi_checks::Invalid;
using ffi_checks::WithLead;

// Problem size of one call; `lead` are the leading batch dims (their product is `batch`).
struct DeltaDims {
  int64_t batch = 0, length = 0, heads = 0, dk = 0, dv = 0;
  int64_t chunk = 0;    // steps between saved chunk-boundary states
  int64_t nchunks = 0;  // ceil(length / chunk), at least 1
  std::vector<int64_t> lead;

  // Offsets of (b, t, h)'s rows: q and k (dk floats), v and o (dv), beta (1).
  int64_t Row(int64_t b, int64_t t, int64_t h) const { return (b * length + t) * heads + h; }
  // Offset of (b, h)'s [dk, dv] state, and of (b, chunk c, h)'s saved state.
  int64_t State(int64_t b, int64_t h) const { return (b * heads + h) * dk * dv; }
  int64_t ChunkState(int64_t b, int64_t c, int64_t h) const { return ((b * nchunks + c) * heads + h) * dk * dv; }
};

inline int64_t NumChunks(int64_t length, int64_t chunk) {
  const int64_t n = (length + chunk - 1) / chunk;
  return n < 1 ? 1 : n;
}

// Validates q, k, v, beta and the chunk attribute; fills `dims` on success.
inline ffi::Error CheckInputs(const char* target, const ffi::AnyBuffer& q, const ffi::AnyBuffer& k,
                              const ffi::AnyBuffer& v, const ffi::AnyBuffer& beta, int64_t chunk,
                              DeltaDims* dims) {
  const auto qd = q.dimensions();
  const auto vd = v.dimensions();
  if (qd.size() < 4) {
    return Invalid(target, "q must have shape (batch, length, heads, d_k), got " + ffi_checks::ShapeString(qd));
  }
  if (vd.size() != qd.size()) {
    return Invalid(target, "v must have shape (batch, length, heads, d_v), got " + ffi_checks::ShapeString(vd));
  }
  const ffi::DataType t = q.element_type();
  FFI_RETURN_IF_ERROR(ffi_checks::CheckFloatType(target, "q", t));
  if (chunk < 1) return Invalid(target, "chunk must be >= 1, got " + std::to_string(chunk));
  DeltaDims d;
  const size_t r = qd.size();
  d.lead.assign(qd.begin(), qd.begin() + (r - 3));
  d.batch = 1;
  for (int64_t x : d.lead) d.batch *= x;
  d.length = qd[r - 3];
  d.heads = qd[r - 2];
  d.dk = qd[r - 1];
  d.dv = vd[r - 1];
  d.chunk = chunk;
  d.nchunks = NumChunks(d.length, chunk);
  if (d.dk < 1 || d.dv < 1) {
    return Invalid(target, "d_k and d_v must be >= 1, got " + std::to_string(d.dk) + " and " + std::to_string(d.dv));
  }
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "k", k, t, WithLead(d.lead, {d.length, d.heads, d.dk})));
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "v", v, t, WithLead(d.lead, {d.length, d.heads, d.dv})));
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "beta", beta, t, WithLead(d.lead, {d.length, d.heads})));
  *dims = std::move(d);
  return ffi::Error::Success();
}

// Shapes of the [..., H, K, V] states and of the [..., nchunks, H, K, V] chunk states.
inline std::vector<int64_t> StateShape(const DeltaDims& d) { return WithLead(d.lead, {d.heads, d.dk, d.dv}); }
inline std::vector<int64_t> ChunkStatesShape(const DeltaDims& d) {
  return WithLead(d.lead, {d.nchunks, d.heads, d.dk, d.dv});
}
inline std::vector<int64_t> RowsShape(const DeltaDims& d, int64_t width) {
  return WithLead(d.lead, {d.length, d.heads, width});
}

// The forward call's other operand and its results, after CheckInputs.
inline ffi::Error CheckForward(const char* target, const DeltaDims& d, ffi::DataType t, const ffi::AnyBuffer& h0,
                               const ffi::AnyBuffer& o, const ffi::AnyBuffer& last,
                               const ffi::AnyBuffer& chunk_states) {
  const auto F32 = ffi::DataType::F32;
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "initial_state", h0, F32, StateShape(d)));
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "o", o, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(ffi_checks::CheckOperandShape(target, "last_state", last, F32, StateShape(d)));
  return ffi_checks::CheckOperandShape(target, "chunk_states", chunk_states, F32, ChunkStatesShape(d));
}

// The backward call's other operands and its results, after CheckInputs.
inline ffi::Error CheckBackward(const char* target, const DeltaDims& d, ffi::DataType t,
                                const ffi::AnyBuffer& chunk_states, const ffi::AnyBuffer& dout,
                                const ffi::AnyBuffer& dlast, const ffi::AnyBuffer& dq, const ffi::AnyBuffer& dk,
                                const ffi::AnyBuffer& dv, const ffi::AnyBuffer& dbeta, const ffi::AnyBuffer& dh0) {
  const auto F32 = ffi::DataType::F32;
  using ffi_checks::CheckOperandShape;
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "chunk_states", chunk_states, F32, ChunkStatesShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dout", dout, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dlast", dlast, F32, StateShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dq", dq, t, RowsShape(d, d.dk)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dk", dk, t, RowsShape(d, d.dk)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dv", dv, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(target, "dbeta", dbeta, t, WithLead(d.lead, {d.length, d.heads})));
  return CheckOperandShape(target, "dinitial_state", dh0, F32, StateShape(d));
}

}  // namespace delta_rule

#endif  // XLA_FFI_CSRC_DELTA_RULE_COMMON_H_
