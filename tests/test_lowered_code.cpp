// What the lowering leaves for the C compiler: the integer divisions a convolution's kernels
// compute per element, counted in the rendered C (issue 18, deliverable 5).
#include <catch2/catch.hpp>

#include "test_support.h"

#include <algorithm>
#include <string>

#include "backends/c/render.h"
#include "lower/lower.h"
#include "uop/text.h"

using namespace ow;
using ow::test::slurp;
using ow::test::source_root;

namespace {

UOp lowered_case(const std::string& name) {
  std::filesystem::path file = source_root() / "reference" / "cases" / (name + ".uop");
  return lower::lower(parse_graph(slurp(file), file.string()).root);
}

std::vector<UOp> kernels(UOp program) {
  std::vector<UOp> out;
  for (UOp u : toposort(program))
    if (u->op == Ops::KERNEL) out.push_back(u);
  return out;
}

// The C function of a rendered kernel (without the prelude's helpers, which divide too).
std::string function_of(const backend::RenderedKernel& r) {
  size_t begin = r.source.find("int " + r.name + "(");
  REQUIRE(begin != std::string::npos);
  size_t end = r.source.find("\n}\n", begin);
  REQUIRE(end != std::string::npos);
  return r.source.substr(begin, end - begin);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("vmap_convs' kernels divide once per reduction step, not per load", "[lowered][divmod]") {
  // Before the gate-aware index math and the common-factor split: 328 divisions and 325 modulos
  // (the RESHAPE behind each PAD of the 3x3 taps unlinearized its index again per load).
  size_t div = 0, mod = 0, loads = 0;
  for (UOp k : kernels(lowered_case("vmap_convs"))) {
    std::string f = function_of(backend::render_kernel(k));
    div += count(f, " / ");
    mod += count(f, " % ");
    loads += count(f, "b1[") + count(f, "b2[");
  }
  CHECK(loads > 50);  // the taps are still there
  // what is left: the second im2col kernel splits its index p over 8 channels x 9 taps once
  CHECK(div == 1);
  CHECK(mod == 1);
}

TEST_CASE("vmap_convs' convolutions read their im2col from a copy, not nine gated taps per output channel", "[lowered][realize]") {
  // 'a reduction reads a costly broadcast value through a copy': the stacked taps (each a pad of
  // the relu of the previous layer) are computed once per image, not once per output channel.
  std::vector<UOp> ks = kernels(lowered_case("vmap_convs"));
  CHECK(ks.size() == 5);  // before: 3, each convolution recomputing its taps inside the reduction
  size_t reductions = 0;
  for (UOp k : ks) {
    std::vector<UOp> ast = toposort(k->src[0]);
    if (std::none_of(ast.begin(), ast.end(), [](UOp u) { return u->op == Ops::REDUCE; })) continue;
    ++reductions;
    size_t gated = std::count_if(ast.begin(), ast.end(), [](UOp u) { return u->op == Ops::INDEX && u->src.size() == 3; });
    CHECK(gated == 0);
  }
  CHECK(reductions == 2);
}
