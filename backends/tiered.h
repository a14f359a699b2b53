// --backend auto, a tiered JIT: a program starts on tcc (it compiles in about a millisecond) and
// moves to cc (optimized code, a compile of a second or more) without waiting for it. cc compiles
// in a background thread once the program runs a second time, since a program run once would never
// use it; the runs after it is ready are cc's. Every backend computes exactly the interpreter's
// bits, so results are identical across the switch.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "interp/inputs.h"
#include "uop/uop.h"

namespace ow::backend {

class Program;
struct RunOptions;

class CcUpgrade {
 public:
  CcUpgrade(UOp lowered, const RunOptions& opts);  // opts as given; the upgrade runs them on cc
  ~CcUpgrade();                                    // waits for a compile under way
  CcUpgrade(const CcUpgrade&) = delete;
  CcUpgrade& operator=(const CcUpgrade&) = delete;

  void start();       // begin compiling (once; later calls do nothing)
  Program* ready();   // the cc program once compiled, else nullptr (also when cc failed)
  std::string error() const;  // why cc failed ("" when it did not)
  // Program::graph_writes, handed on to the cc program when it is ready.
  void graph_writes(const std::vector<interp::BufferSpec>& graph_specs);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ow::backend
