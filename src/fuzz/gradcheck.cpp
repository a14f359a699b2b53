// Central differences (see gradcheck.h). Numerics: with step h the quotient's error is the
// truncation h^2 f'''/6 plus rounding ~ eps |f| / h. Both are estimated from the quotients at h
// and 2h (they differ by ~3x the truncation) and a rounding bound of 1e-9 (|f| + 1) (h = 1e-6,
// with ten times margin for the sums' own rounding). An element is compared only when the
// truncation estimate is below 1e-4 of the gradient's size plus the rounding bound (so a zero
// gradient is compared too); it then must agree within 1e-5 relative plus four times the
// estimate. A wrong rule is off by O(1) relative, far outside either bound.
#include "fuzz/gradcheck.h"

#include <cmath>
#include <sstream>

#include "interp/inputs.h"
#include "tensor/random.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::fuzz {

namespace {

double sum_of(UOp loss, const interp::BufferMap& in) {
  UOp graph = UOp::sink({loss}, Arg(ArgTuple{Arg("loss")}));
  interp::BufferMap b = interp::copy_buffers(interp::buffers_for(graph, in));
  std::vector<interp::Output> out = interp::run(graph, b);
  double s = 0;
  for (int64_t i = 0; i < out[0].value.numel(); ++i) s += interp::get_element(out[0].value, i);
  return s;
}

// The buffer a variable views whole (RESHAPE of a BUFFER of the same size, or the BUFFER), or null.
UOp whole_buffer(UOp x) {
  if (x->op == Ops::RESHAPE) x = x->src[0];
  return x->op == Ops::BUFFER && x->dtype == dtypes::float64 ? x : UOp();
}

}  // namespace

FdCheck check_finite_differences(UOp root, const interp::BufferMap& inputs, uint64_t seed, int samples_per_var) {
  interp::BufferMap b = interp::copy_buffers(interp::buffers_for(root, inputs));
  std::vector<interp::Output> grads = interp::run(root, b);
  Random rng;
  rng.seed(seed ^ 0x6664ULL);
  FdCheck r;
  for (size_t k = 0; k < root->src.size() && r.ok; ++k) {
    UOp g = root->src[k];
    UOp buf = g->op == Ops::GRADIENT ? whole_buffer(g->src[1]) : UOp();
    if (!buf) continue;
    const std::string& name = buffer_name(buf);
    const interp::Value& gv = grads[k].value;
    if (!inputs.count(name) || gv.numel() != inputs.at(name).data->size) continue;
    double f0 = sum_of(g->src[0], inputs);
    for (int s = 0; s < samples_per_var && gv.numel() > 0; ++s) {
      int64_t i = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(gv.numel()));
      auto quotient = [&](double h) {
        interp::BufferMap p = interp::copy_buffers(inputs), m = interp::copy_buffers(inputs);
        p[name].data->as<double>()[i] += h;
        m[name].data->as<double>()[i] -= h;
        return (sum_of(g->src[0], p) - sum_of(g->src[0], m)) / (2 * h);
      };
      double fd = quotient(1e-6), fd2 = quotient(2e-6), got = interp::get_element(gv, i);
      double scale = std::max(std::fabs(fd), std::fabs(got));
      double trunc = std::fabs(fd - fd2), rounding = 1e-9 * (std::fabs(f0) + 1), err = trunc + rounding;
      if (!std::isfinite(fd) || !std::isfinite(fd2) || !std::isfinite(got) || !std::isfinite(f0) || trunc > 1e-4 * scale + rounding) {
        ++r.unreliable;
        continue;
      }
      ++r.checked;
      if (std::fabs(got - fd) > 1e-5 * scale + 4 * err) {
        std::ostringstream os;
        os.precision(17);
        os << "gradient differs from central differences: output " << k << " d loss / d " << name << "[" << i << "] = " << got
           << ", finite differences " << fd << " (h = 1e-6; " << fd2 << " with 2h)";
        r.ok = false;
        r.error = os.str();
        break;
      }
    }
  }
  return r;
}

}  // namespace ow::fuzz
