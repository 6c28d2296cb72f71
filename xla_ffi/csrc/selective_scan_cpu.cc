// CPU selective scan (Mamba semantics) as XLA FFI handlers, SelectiveScanFwdCpu and
// SelectiveScanBwdCpu: operand checks and dtype dispatch to the forward and backward passes
// (selective_scan_cpu_fwd.cc, selective_scan_cpu_bwd.cc). See the FFI contract in
// xla_ffi/api.py.

#include <cstdint>

#include "selective_scan_cpu.h"

namespace selective_scan::cpu {
namespace {

using namespace ffi_checks;  // NOLINT(build/namespaces): the handlers are written in its vocabulary

constexpr const char* kFwdName = "selective_scan_fwd";
constexpr const char* kBwdName = "selective_scan_bwd";

// The forward operands of a checked call as typed pointers (outputs left null).
template <typename T>
FwdArgs<T> MakeFwdArgs(const ScanDims& d, const ffi::AnyBuffer& u, const ffi::AnyBuffer& delta,
                       const ffi::AnyBuffer& A, const ffi::AnyBuffer& Bm, const ffi::AnyBuffer& Cm,
                       const ffi::AnyBuffer& Dskip, const ffi::AnyBuffer& z,
                       const ffi::AnyBuffer& delta_bias) {
  return FwdArgs<T>{d,           In<T>(u),     In<T>(delta),           In<T>(Bm), In<T>(Cm), In<T>(z),
                    In<float>(A), In<float>(Dskip), In<float>(delta_bias), nullptr,   nullptr,   nullptr};
}

ffi::Error FwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                       ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                       ffi::AnyBuffer delta_bias, ffi::Result<ffi::AnyBuffer> y,
                       ffi::Result<ffi::AnyBuffer> last_state, ffi::Result<ffi::AnyBuffer> chunk_states,
                       bool softplus, bool has_z, int64_t chunk) {
  ScanDims d;
  FFI_RETURN_IF_ERROR(
      CheckForwardOperands(kFwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &d));
  const auto t = u.element_type();
  const auto F32 = ffi::DataType::F32;
  const Expect expected[] = {
      {"y", *y, t, {d.batch, d.length, d.channels}},
      {"last_state", *last_state, F32, {d.batch, d.channels, d.state}},
      {"chunk_states", *chunk_states, F32, {d.batch, d.nchunks, d.channels, d.state}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kFwdName, expected));
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    FwdArgs<T> a = MakeFwdArgs<T>(d, u, delta, A, Bm, Cm, Dskip, z, delta_bias);
    a.y = Out<T>(y);
    a.last_state = Out<float>(last_state);
    a.chunk_states = Out<float>(chunk_states);
    return FwdImpl<T>(pool, a);
  });
}

ffi::Error BwdDispatch(ffi::ThreadPool pool, ffi::AnyBuffer u, ffi::AnyBuffer delta, ffi::AnyBuffer A,
                       ffi::AnyBuffer Bm, ffi::AnyBuffer Cm, ffi::AnyBuffer Dskip, ffi::AnyBuffer z,
                       ffi::AnyBuffer delta_bias, ffi::AnyBuffer chunk_states, ffi::AnyBuffer dy,
                       ffi::AnyBuffer dlast, ffi::Result<ffi::AnyBuffer> du,
                       ffi::Result<ffi::AnyBuffer> ddelta, ffi::Result<ffi::AnyBuffer> dA,
                       ffi::Result<ffi::AnyBuffer> dB, ffi::Result<ffi::AnyBuffer> dC,
                       ffi::Result<ffi::AnyBuffer> dDskip, ffi::Result<ffi::AnyBuffer> dz,
                       ffi::Result<ffi::AnyBuffer> ddelta_bias, bool softplus, bool has_z, int64_t chunk) {
  ScanDims d;
  FFI_RETURN_IF_ERROR(
      CheckForwardOperands(kBwdName, u, delta, A, Bm, Cm, Dskip, z, delta_bias, softplus, has_z, chunk, &d));
  const auto t = u.element_type();
  const auto F32 = ffi::DataType::F32;
  const int64_t B = d.batch, L = d.length, D = d.channels, N = d.state;
  const Expect expected[] = {
      {"chunk_states", chunk_states, F32, {B, d.nchunks, D, N}},
      {"dy", dy, t, {B, L, D}},
      {"dlast", dlast, F32, {B, D, N}},
      {"du", *du, t, {B, L, D}},
      {"ddelta", *ddelta, t, {B, L, D}},
      {"dA", *dA, F32, {D, N}},
      {"dB", *dB, F32, {B, L, N}},
      {"dC", *dC, F32, {B, L, N}},
      {"dDskip", *dDskip, F32, {D}},
      {"ddelta_bias", *ddelta_bias, F32, {D}},
  };
  FFI_RETURN_IF_ERROR(CheckAll(kBwdName, expected));
  if (has_z) {
    FFI_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz", *dz, t, {B, L, D}));
  } else {
    FFI_RETURN_IF_ERROR(CheckOperand(kBwdName, "dz", *dz, t, {0}));
  }
  return DispatchStorage(t == ffi::DataType::F32, [&](auto tag) {
    using T = decltype(tag);
    BwdArgs<T> a;
    a.f = MakeFwdArgs<T>(d, u, delta, A, Bm, Cm, Dskip, z, delta_bias);
    a.chunk_states = In<float>(chunk_states);
    a.dy = In<T>(dy);
    a.dlast = In<float>(dlast);
    a.du = Out<T>(du);
    a.ddelta = Out<T>(ddelta);
    a.dz = Out<T>(dz);
    const BwdPartials out{Out<float>(dA), Out<float>(dB), Out<float>(dC), Out<float>(dDskip),
                          Out<float>(ddelta_bias)};
    return BwdImpl<T>(pool, a, out);
  });
}

}  // namespace
}  // namespace selective_scan::cpu

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanFwdCpu, selective_scan::cpu::FwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // u [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // A [D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // Bm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Cm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Dskip [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // z [B, L, D] or [0] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta_bias [D] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // y [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // last_state [B, D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // chunk_states [B, nc, D, N] f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SelectiveScanBwdCpu, selective_scan::cpu::BwdDispatch,
                              xla::ffi::Ffi::Bind()
                                  .Ctx<xla::ffi::ThreadPool>()
                                  .Arg<xla::ffi::AnyBuffer>()  // u [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // A [D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // Bm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Cm [B, L, N] T
                                  .Arg<xla::ffi::AnyBuffer>()  // Dskip [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // z [B, L, D] or [0] T
                                  .Arg<xla::ffi::AnyBuffer>()  // delta_bias [D] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // chunk_states [B, nc, D, N] f32
                                  .Arg<xla::ffi::AnyBuffer>()  // dy [B, L, D] T
                                  .Arg<xla::ffi::AnyBuffer>()  // dlast [B, D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // du [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // ddelta [B, L, D] T
                                  .Ret<xla::ffi::AnyBuffer>()  // dA [D, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dB [B, L, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dC [B, L, N] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dDskip [D] f32
                                  .Ret<xla::ffi::AnyBuffer>()  // dz [B, L, D] or [0] T
                                  .Ret<xla::ffi::AnyBuffer>()  // ddelta_bias [D] f32
                                  .Attr<bool>("softplus")
                                  .Attr<bool>("has_z")
                                  .Attr<int64_t>("chunk"));