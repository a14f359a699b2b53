// ow bench --grad-memory: the backward of a scan of N steps over a state of S elements needs
// O(N*S) extra memory (SEMANTICS S9.3: one tape slot per iteration of the state each store
// overwrites, plus a working copy and an adjoint per buffer). For N = 100, 1000, 10000 and S = 16
// it prints the bytes of the buffers the gradient expansion adds, per N*S*8 bytes, and the time
// per step of the whole forward + backward on the interpreter and the compiled backends (whose
// gradients must equal the interpreter's bit for bit).
#include <chrono>
#include <cstdio>
#include <cmath>

#include "backends/program.h"
#include "bench.h"
#include "cli.h"
#include "grad/gradient.h"
#include "interp/interp.h"
#include "lower/lower.h"
#include "tensor/tensor.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli::bench {

namespace {

// h_{i+1} = sin(h_i * w + x_i) over an OUTER range of n; the loss is the sum of the last state.
UOp scan_gradient(int64_t n, int64_t s) {
  Tensor h = Tensor::empty({s}, dtypes::float64, "h"), x = Tensor::empty({n, s}, dtypes::float64, "x"), w = Tensor::empty({s}, dtypes::float64, "w");
  UOp i = UOp::range(n, -1, AxisType::OUTER);
  Tensor h_i = h.after({i});
  Tensor next((h_i * w + x[i]).uop().alu(Ops::SIN, {}));
  Tensor loss = h.after({h_i.store(next).end({i}).uop()});
  ArgTuple names{Arg("x_grad"), Arg("w_grad"), Arg("h_grad")};
  return UOp::sink({UOp::make(Ops::GRADIENT, dtypes::float64, {loss.uop(), x.uop()}), UOp::make(Ops::GRADIENT, dtypes::float64, {loss.uop(), w.uop()}),
                    UOp::make(Ops::GRADIENT, dtypes::float64, {loss.uop(), h.uop()})},
                   Arg(names));
}

int64_t temporary_bytes(UOp g) {
  int64_t bytes = 0;
  for (UOp u : toposort(g))
    if (u->op == Ops::BUFFER && is_temporary(buffer_name(u))) bytes += buffer_size(u) * static_cast<int64_t>(u->dtype.itemsize());
  return bytes;
}

double time_interp(UOp g, const interp::BufferMap& in, int repeat, std::vector<interp::Output>& outs) {
  std::vector<double> t;
  for (int k = 0; k < repeat; ++k) {
    interp::BufferMap b = copy_buffers(in);
    auto t0 = Clock::now();
    outs = interp::run(g, b);
    t.push_back(seconds_since(t0));
  }
  return summarize(t).median;
}

// Bit for bit, as everywhere in outerworld (first_difference: NaNs equal, -0 != +0).
bool same_bits(const std::vector<interp::Output>& a, const std::vector<interp::Output>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (first_difference(a[k].value, b[k].value)) return false;
  return true;
}

}  // namespace

int bench_grad_memory(const Settings& s) {
  const int64_t S = 16;
  int rc = 0;
  std::printf("scan gradient: h = sin(h * w + x[i]) over an OUTER range of N steps, state S = %lld float64; d sum(h_N) / d x, w, h\n", static_cast<long long>(S));
  std::printf("  extra = bytes of the buffers the GRADIENT expansion adds (tapes, working copies, adjoints); per step: forward + backward, median of %d\n",
              std::min(s.repeat, 3));
  std::printf("%8s %12s %14s %10s %14s %14s %14s\n", "N", "N*S*8", "extra", "extra/NS8", "interp/step", "tcc/step", "cc/step");
  for (int64_t n : {100, 1000, 10000}) {
    UOp g = scan_gradient(n, S);
    int64_t extra = temporary_bytes(grad::expand(g));
    interp::BufferMap in;
    fill_random_inputs(g, in, 3);
    std::vector<interp::Output> ref, got;
    double ti = has_backend(s, "interp") ? time_interp(g, in, std::min(s.repeat, 3), ref) : NAN;
    if (ref.empty()) {
      interp::BufferMap b = copy_buffers(in);
      ref = interp::run(g, b);
    }
    double tc[2] = {NAN, NAN};
    const char* tiers[2] = {"tcc", "cc"};
    UOp program = lower::lower(g);
    for (int k = 0; k < 2; ++k) {
      if (!has_backend(s, tiers[k])) continue;
      tc[k] = time_compiled(program, in, tiers[k], std::min(s.repeat, 3), got).median;
      if (!same_bits(ref, got)) std::printf("  %s: WRONG (the gradients differ from the interpreter's)\n", tiers[k]), rc = 1;
    }
    double ns8 = static_cast<double>(n * S * 8);
    std::printf("%8lld %12.0f %14lld %10.2f %14s %14s %14s\n", static_cast<long long>(n), ns8, static_cast<long long>(extra), static_cast<double>(extra) / ns8,
                fmt_time(ti / static_cast<double>(n)).c_str(), fmt_time(tc[0] / static_cast<double>(n)).c_str(), fmt_time(tc[1] / static_cast<double>(n)).c_str());
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace ow::cli::bench
