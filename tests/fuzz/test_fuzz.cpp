// The generator and shrinker of ow fuzz (src/fuzz): deterministic, valid graphs; a shrinker that
// reduces an injected "finding" to a minimal graph.
#include <catch2/catch.hpp>

#include <algorithm>

#include <filesystem>

#include "fuzz/generate.h"
#include "fuzz/gradcheck.h"
#include "interp/interp.h"
#include "tensor/random.h"
#include "uop/args.h"
#include "test_support.h"
#include "uop/error.h"
#include "uop/text.h"
#include "uop/verify.h"

using namespace ow;

namespace {
bool contains(UOp root, Ops op) {
  for (UOp u : toposort(root))
    if (u->op == op) return true;
  return false;
}
}  // namespace

TEST_CASE("fuzz: the same seed gives the same graph", "[fuzz]") {
  for (uint64_t seed : {1u, 2u, 17u, 12345u}) {
    std::string a = print_graph(fuzz::generate(seed).root);
    std::string b = print_graph(fuzz::generate(seed).root);
    REQUIRE(a == b);
    // and the printed graph parses back to the very same node
    REQUIRE(parse_graph(a).root == fuzz::generate(seed).root);
  }
  REQUIRE(print_graph(fuzz::generate(1).root) != print_graph(fuzz::generate(2).root));
}

TEST_CASE("fuzz: generated graphs pass the verifier and the interpreter evaluates them", "[fuzz]") {
  int interp_ok = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    fuzz::Generated g = fuzz::generate(seed);
    INFO("seed " << seed << "\n" << print_graph(g.root));
    REQUIRE(verify(g.root).empty());
    REQUIRE(g.root->op == Ops::SINK);
    interp::BufferMap buffers;  // no data: refused when the graph has inputs
    try {
      interp::run(g.root, buffers);
      ++interp_ok;
    } catch (const Error& e) {
      std::string m = e.what();
      INFO(m);
      // a missing input, poison, or a gradient graph's clear refusal (SEMANTICS S9.5)
      REQUIRE((m.find("was given no data") != std::string::npos || m.find("uninitialized") != std::string::npos || (g.loss && m.rfind("gradient: ", 0) == 0)));
    }
  }
  REQUIRE(interp_ok > 0);
}

TEST_CASE("fuzz: the generator covers the ops and range forms", "[fuzz]") {
  std::map<Ops, int> ops;
  std::map<std::string, int> forms;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    fuzz::Generated g = fuzz::generate(seed);
    for (UOp u : toposort(g.root)) ops[u->op]++;
    for (const auto& f : g.forms) forms[f]++;
  }
  for (Ops op : {Ops::RESHAPE, Ops::PERMUTE, Ops::EXPAND, Ops::PAD, Ops::SHRINK, Ops::FLIP, Ops::REDUCE_AXIS, Ops::REDUCE, Ops::CAST,
                 Ops::WHERE, Ops::CONTIGUOUS, Ops::ASSIGN, Ops::STORE, Ops::END, Ops::AFTER, Ops::RANGE, Ops::IDIV, Ops::MOD, Ops::MAX, Ops::BITCAST})
    CHECK(ops[op] > 0);
  for (const char* f : {"vmap-pad-reduce", "vmap-collect", "index-by-range", "slice-by-range", "assign-scan-rows", "assign-overlap-whole",
                        "assign-overlap-window", "scan-store-outer", "fold-outer", "axis-OUTER", "axis-LOOP", "axis-REDUCE", "axis-GLOBAL", "matmul",
                        "effect-in-fold-outer", "effect-in-fold-other", "assign-through-pad", "assign-through-strided-reshape", "range-reduce-nested"})
    CHECK(forms[f] > 0);
  // rarer: an assign form in 4 of 100, about one seed in 75
  bool chain = false;
  for (uint64_t seed = 1; seed <= 3000 && !chain; ++seed) {
    std::vector<std::string> f = fuzz::generate(seed).forms;
    chain = std::find(f.begin(), f.end(), "assign-chain") != f.end();
  }
  CHECK(chain);
}

TEST_CASE("fuzz: the shrinker reduces an injected finding to a minimal graph", "[fuzz]") {
  // The "finding": the graph contains a FLIP. Take the first generated graph that has one.
  UOp root;
  for (uint64_t seed = 1; !root; ++seed) {
    UOp g = fuzz::generate(seed).root;
    if (contains(g, Ops::FLIP) && toposort(g).size() > 30) root = g;
  }
  fuzz::ShrinkStats st;
  UOp small = fuzz::shrink(root, [](UOp g) { return contains(g, Ops::FLIP); }, &st);
  INFO(print_graph(small));
  REQUIRE(contains(small, Ops::FLIP));
  REQUIRE(verify(small).empty());
  REQUIRE(st.nodes_after < st.nodes_before);
  // SINK(FLIP(x)) with x a buffer view or a constant: a handful of nodes (index consts included)
  REQUIRE(toposort(small).size() <= 8);
  REQUIRE(small->op == Ops::SINK);
  REQUIRE(small->src.size() == 1);
  REQUIRE(small->src[0]->op == Ops::FLIP);
}

namespace {
// Uniform data in [-1, 1) for every float64 input (the gradient findings are float64 graphs).
interp::BufferMap float64_inputs(UOp root) {
  interp::BufferMap b;
  Random rng;
  rng.seed(11);
  for (UOp u : toposort(root)) {
    if (u->op != Ops::BUFFER || u->dtype != dtypes::float64) continue;
    const std::string& name = buffer_name(u);
    if (b.count(name) || is_temporary(name)) continue;
    auto s = std::make_shared<interp::Storage>(u->dtype, buffer_size(u));
    for (int64_t i = 0; i < s->size; ++i) s->as<double>()[i] = rng.uniform() * 2 - 1;
    b[name] = interp::BufferData{u->dtype, s, nullptr};
  }
  return b;
}
}  // namespace

TEST_CASE("fuzz: gradient findings (tests/fuzz/grad) agree with central differences, or are refused", "[fuzz][grad]") {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::source_root() / "tests" / "fuzz" / "grad")) {
    if (e.path().extension() != ".uop") continue;
    ++files;
    std::string name = e.path().filename().string();
    INFO(name);
    UOp root = parse_graph(test::slurp(e.path()), e.path().string()).root;
    interp::BufferMap in = float64_inputs(root);
    if (name.rfind("refused-", 0) == 0) {  // the expansion used to build an invalid graph
      try {
        interp::BufferMap b = in;
        interp::run(root, b);
        FAIL("expected a refusal");
      } catch (const Error& err) {
        CHECK_THAT(err.what(), Catch::StartsWith("gradient: "));
      }
      continue;
    }
    fuzz::FdCheck c = fuzz::check_finite_differences(root, in, 5);
    INFO(c.error);
    CHECK(c.ok);
    CHECK(c.checked > 0);
  }
  CHECK(files >= 5);
}
