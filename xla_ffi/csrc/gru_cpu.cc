// CPU GRU recurrence as XLA FFI handlers, GruFwdCpu and GruBwdCpu: operand checks and dtype
// dispatch to the forward and backward passes (gru_cpu_fwd.cc, gru_cpu_bwd.cc). See the FFI
// contract in xla_ffi/gru.py.

#include <cstdint>

#include "gru_cpu.h"

namespace gru::cpu {
namespace {

using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary

constexpr const char* kFwdName = "gru_fwd";
constexpr const char* kBwdName = "gru_bwd";

ffi::Error FwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer gx, ffi::AnyBuffer h0, ffi::AnyBuffer W,
                       ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> y, ffi::Result<ffi::AnyBuffer> last,
                       ffi::Result<ffi::AnyBuffer> gates, bool save_gates) {
  GruDims d;
  FFI_RETURN_IF_ERROR(CheckInputs(kFwdName, gx, h0, W, b, &d));
  const auto t = gx.element_type();
  const auto F32 = ffi::DataType::F32;
  const int64_t B = d.batch, L = d.length, H = d.hidden, gate_rows = save_gates ? B : 0;
  const Expect expected[] = {
      {"y", *y, t, {B, L, H}},
      {"last_state", *last, F32, {B, H}},
      {"gates", *gates, F32, {gate_rows, L, 4 * H}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kFwdName, expected));
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    const FwdArgs<T> a{d, In<T>(gx), In<float>(h0), In<float>(W), In<float>(b), Out<T>(y), Out<float>(last),
                       save_gates ? Out<float>(gates) : nullptr};
    return FwdImpl<T>(pool, a);
  });
}

ffi::Error BwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer Wt, ffi::AnyBuffer h0, ffi::AnyBuffer y,
                       ffi::AnyBuffer gates, ffi::AnyBuffer dy, ffi::AnyBuffer dlast, ffi::Result<ffi::AnyBuffer> dgx,
                       ffi::Result<ffi::AnyBuffer> dgh, ffi::Result<ffi::AnyBuffer> dh0) {
  const auto yd = y.dimensions();
  const auto wd = Wt.dimensions();
  if (yd.size() != 3 || wd.size() != 2) {
    return ffi_checks::Invalid(kBwdName, "y must have shape (batch, length, hidden) and W^T be a matrix, got " +
                                             ffi_checks::ShapeString(yd) + " and " + ffi_checks::ShapeString(wd));
  }
  const auto t = y.element_type();
  FFI_RETURN_IF_ERROR(ffi_checks::CheckFloatType(kBwdName, "y", t));
  const auto F32 = ffi::DataType::F32;
  const GruDims d{yd[0], yd[1], yd[2]};
  const int64_t B = d.batch, L = d.length, H = d.hidden;
  const Expect expected[] = {
      {"W^T", Wt, F32, {3 * H, H}},       {"h0", h0, F32, {B, H}},       {"gates", gates, F32, {B, L, 4 * H}},
      {"dy", dy, t, {B, L, H}},           {"dlast", dlast, F32, {B, H}}, {"dgx", *dgx, t, {B, L, 3 * H}},
      {"dgh", *dgh, F32, {B, L, 3 * H}}, {"dh0", *dh0, F32, {B, H}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kBwdName, expected));
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    const BwdArgs<T> a{d,         In<float>(Wt), In<float>(h0), In<T>(y),        In<float>(gates), In<T>(dy),
                       In<float>(dlast), Out<T>(dgx), Out<float>(dgh), Out<float>(dh0)};
    return BwdImpl<T>(pool, a);
  });
}

}  // namespace
}  // namespace gru::cpu

XLA_FFI_DEFINE_HANDLER_SYMBOL(GruFwdCpu, gru::cpu::FwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // gx [B, L, 3H] T
                                  .Arg<xla::ffi::AnyBuffer>()  // h0 [B, H] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // W [H, 3H] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // b [3H] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // y [B, L, H] T
                                  .Ret<xla::ffi::AnyBuffer>()  // last_state [B, H] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // gates [B, L, 4H] or [0, L, 4H] f32
                                  .Attr<bool>("save_gates"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(GruBwdCpu, gru::cpu::BwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // W^T [3H, H] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // h0 [B, H] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // y [B, L, H] T
                                  .Arg<xla::ffi::AnyBuffer>()  // gates [B, L, 4H] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // dy [B, L, H] T
                                  .Arg<xla::ffi::AnyBuffer>()  // dlast [B, H] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dgx [B, L, 3H] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dgh [B, L, 3H] f32
                                  .Ret<xla::ffi::AnyBuffer>());  // dh0 [B, H] f32
