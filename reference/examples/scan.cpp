// The seed's scan with assign, built with the Tensor API (reference/TUTORIAL.md, step 1).
//
//   scan_example [FILE.uop] [--backend interp|tcc|cc|check]
//
// Builds out[k] = vec @ M0 @ ... @ Mk for 3 steps of 10 with an OUTER range, writes the graph
// as .uop text (to FILE or stdout), then realizes it on the chosen backend and prints the rows.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "backends/program.h"
#include "tensor/tensor.h"
#include "uop/text.h"

using namespace ow;

int main(int argc, char** argv) {
  std::string file, backend = "interp";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
    else file = argv[i];
  }
  if (backend != "interp")
    set_evaluator([backend](UOp g, interp::BufferMap& b) {
      backend::RunOptions o;
      o.backend = backend::parse_backend(backend);
      return backend::run_graph(g, b, o);
    });

  Tensor::manual_seed(0);
  Tensor vec = Tensor::randn({1, 10}, "vec"), mats = Tensor::randn({3, 10, 10}, "mats");
  UOp a = UOp::range(3, -1, AxisType::OUTER);  // printed as m1
  Tensor out = Tensor::empty({3, 1, 10}, dtypes::float32, "out");  // uninitialized: tracked as poison
  // step a reads the previous row (row 0 at a = 0, discarded by the where) ...
  Tensor phi(a.eq(0).where(vec.uop(), out[(a - 1).maximum(0)].uop()));
  Tensor row = phi.matmul(mats.reduce_backward({a}, Ops::ADD)[a]);
  // ... and its result is padded into row a; the OUTER reduce assigned to out is the scan.
  row = row.reshape({1, 1, 10}).pad({std::make_pair(Dim(a), Dim(3 - a - 1)), std::nullopt, std::nullopt});
  Tensor scan(out.assign(row.reduce({a}, Ops::ADD)));

  std::string text = print_graph(UOp::sink({scan.uop()}, Arg(ArgTuple{Arg("out")})));
  if (file.empty()) std::cout << text;
  else std::ofstream(file) << text;

  xt::xarray<float> result = scan.numpy();  // realize on the chosen backend
  for (int k = 0; k < 3; ++k) {
    std::printf("out[%d] =", k);
    for (int j = 0; j < 10; ++j) std::printf(" %.4f", result(k, 0, j));
    std::printf("\n");
  }
  return 0;
}
