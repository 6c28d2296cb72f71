// CPU delta rule (DeltaNet) as XLA FFI handlers, DeltaRuleFwdCpu and DeltaRuleBwdCpu:
// operand checks and dtype dispatch to the forward and backward passes (delta_rule_cpu_fwd.cc,
// delta_rule_cpu_bwd.cc). See the FFI contract in xla_ffi/deltanet.py.

#include <cstdint>

#include "delta_rule_cpu.h"

namespace delta_rule::cpu {
namespace {

using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary

constexpr const char* kFwdName = "delta_rule_fwd";
constexpr const char* kBwdName = "delta_rule_bwd";

ffi::Error FwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer q, ffi::AnyBuffer k, ffi::AnyBuffer v,
                       ffi::AnyBuffer beta, ffi::AnyBuffer h0, ffi::Result<ffi::AnyBuffer> o,
                       ffi::Result<ffi::AnyBuffer> last, ffi::Result<ffi::AnyBuffer> chunk_states, int64_t chunk) {
  DeltaDims d;
  FFI_RETURN_IF_ERROR(CheckInputs(kFwdName, q, k, v, beta, chunk, &d));
  const auto t = q.element_type();
  FFI_RETURN_IF_ERROR(CheckForward(kFwdName, d, t, h0, *o, *last, *chunk_states));
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    const FwdArgs<T> a{{In<T>(q), In<T>(k), In<T>(v), In<T>(beta), In<float>(h0), Out<T>(o), Out<float>(last),
                        Out<float>(chunk_states)},
                       &d};
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
  FFI_RETURN_IF_ERROR(CheckBackward(kBwdName, d, t, chunk_states, dout, dlast, *dq, *dk, *dv, *dbeta, *dh0));
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    const BwdArgs<T> a{{In<T>(q), In<T>(k), In<T>(v), In<T>(beta), In<float>(chunk_states), In<T>(dout),
                        In<float>(dlast), Out<T>(dq), Out<T>(dk), Out<T>(dv), Out<T>(dbeta), Out<float>(dh0)},
                       &d};
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
