// CPU delta rule (DeltaNet) as XLA FFI handlers, DeltaRuleFwdCpu and DeltaRuleBwdCpu:
// operand checks and dtype dispatch to the forward and backward passes (delta_rule_cpu_fwd.cc,
// delta_rule_cpu_bwd.cc). See the FFI contract in xla_ffi/deltanet.py.

#include <cstdint>

#include "delta_rule_cpu.h"

namespace delta_rule::cpu {
namespace {

using ffi_checks::CheckOperandShape;
using ffi_checks::In;
using ffi_checks::Out;

constexpr const char* kFwdName = "delta_rule_fwd";
constexpr const char* kBwdName = "delta_rule_bwd";

// Calls run(float{}) or run(Bf16{}) for the storage type `t` (checked to be one of them).
template <typename Run>
ffi::Error DispatchDtype(ffi::DataType t, Run&& run) {
  return t == ffi::DataType::F32 ? run(float{}) : run(Bf16{});
}

ffi::Error FwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                       ffi::AnyBuffer beta, ffi::AnyBuffer h0, ffi::Result<ffi::AnyBuffer> o,
                       ffi::Result<ffi::AnyBuffer> last, ffi::Result<ffi::AnyBuffer> chunk_states, int64_t chunk) {
  DeltaDims d;
  FFI_RETURN_IF_ERROR(CheckInputs(kFwdName, q, k, v, beta, chunk, &d));
  const auto t = q.element_type();
  const auto F32 = ffi::DataType::F32;
  FFI_RETURN_IF_ERROR(CheckOperandShape(kFwdName, "initial_state", h0, F32, StateShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kFwdName, "o", *o, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kFwdName, "last_state", *last, F32, StateShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kFwdName, "chunk_states", *chunk_states, F32, ChunkStatesShape(d)));
  return DispatchDtype(t, [&](auto tag) {
    using T = decltype(tag);
    const FwdArgs<T> a{&d,          In<T>(q),      In<T>(k),          In<T>(v), In<T>(beta), In<float>(h0),
                       Out<T>(o),   Out<float>(last), Out<float>(chunk_states)};
    return FwdImpl<T>(pool, a);
  });
}

ffi::Error BwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                       ffi::AnyBuffer beta, ffi::AnyBuffer chunk_states, ffi::AnyBuffer dout,
                       ffi::AnyBuffer dlast, ffi::Result<ffi::AnyBuffer> dq, ffi::Result<ffi::AnyBuffer> dk,
                       ffi::Result<ffi::AnyBuffer> dv, ffi::Result<ffi::AnyBuffer> dbeta,
                       ffi::Result<ffi::AnyBuffer> dh0, int64_t chunk) {
  DeltaDims d;
  FFI_RETURN_IF_ERROR(CheckInputs(kBwdName, q, k, v, beta, chunk, &d));
  const auto t = q.element_type();
  const auto F32 = ffi::DataType::F32;
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "chunk_states", chunk_states, F32, ChunkStatesShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dout", dout, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dlast", dlast, F32, StateShape(d)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dq", *dq, t, RowsShape(d, d.dk)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dk", *dk, t, RowsShape(d, d.dk)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dv", *dv, t, RowsShape(d, d.dv)));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dbeta", *dbeta, t, ffi_checks::WithLead(d.lead, {d.length, d.heads})));
  FFI_RETURN_IF_ERROR(CheckOperandShape(kBwdName, "dinitial_state", *dh0, F32, StateShape(d)));
  return DispatchDtype(t, [&](auto tag) {
    using T = decltype(tag);
    const BwdArgs<T> a{&d,         In<T>(q),  In<T>(k),  In<T>(v),     In<T>(beta), In<float>(chunk_states),
                       In<T>(dout), In<float>(dlast), Out<T>(dq), Out<T>(dk), Out<T>(dv), Out<T>(dbeta),
                       Out<float>(dh0)};
    return BwdImpl<T>(pool, a);
  });
}

}  // namespace
}  // namespace delta_rule::cpu

XLA_FFI_DEFINE_HANDLER_SYMBOL(DeltaRuleFwdCpu, delta_rule::cpu::FwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // q [..., L, H, K] T
                                  .Arg<xla::ffi::AnyBuffer>()  // k [..., L, H, K] T
                                  .Arg<xla::ffi::AnyBuffer>()  // v [..., L, H, V] T
                                  .Arg<xla::ffi::AnyBuffer>()  // beta [..., L, H] T
                                  .Arg<xla::ffi::AnyBuffer>()  // initial_state [..., H, K, V] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // o [..., L, H, V] T
                                  .Ret<xla::ffi::AnyBuffer>()  // last_state [..., H, K, V] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // chunk_states [..., nc, H, K, V] f32
                                  .Attr<int64_t>("chunk"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(DeltaRuleBwdCpu, delta_rule::cpu::BwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // q [..., L, H, K] T
                                  .Arg<xla::ffi::AnyBuffer>()  // k [..., L, H, K] T
                                  .Arg<xla::ffi::AnyBuffer>()  // v [..., L, H, V] T
                                  .Arg<xla::ffi::AnyBuffer>()  // beta [..., L, H] T
                                  .Arg<xla::ffi::AnyBuffer>()  // chunk_states [..., nc, H, K, V] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // dout [..., L, H, V] T
                                  .Arg<xla::ffi::AnyBuffer>()  // dlast [..., H, K, V] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dq [..., L, H, K] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dk [..., L, H, K] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dv [..., L, H, V] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dbeta [..., L, H] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dinitial_state [..., H, K, V] f32
                                  .Attr<int64_t>("chunk"));
