// The report's heat maps: every named buffer a kernel stores to, snapshot after each launch
// inside a host loop, recorded by observing the one host walk (uop/host_program.h).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "json/json.h"
#include "uop/host_program.h"

namespace ow::cli {

struct Frame {
  std::string label;          // "k3 m1=2"
  std::vector<double> cells;  // rows x cols, NaN: uninitialized
};

struct Series {
  std::string buffer;
  int64_t rows = 1, cols = 1, cell_rows = 1, cell_cols = 1;  // buffer layout and heat-map size
  int64_t stride = 1, seen = 0;                              // keeps every stride-th launch
  std::vector<Frame> frames;
};

// An observer of the run's walk: after every launch inside a host loop, a frame of each named
// buffer the kernel stores to, averaged into at most 64 x 64 cells, 64 frames per buffer.
class Timeline : public HostHooks {
 public:
  std::string note;  // how the run went

  // The run's buffers are the timeline's own: run_program(program, timeline.buffers(), ...).
  Timeline(UOp program, interp::BufferMap buffers);
  interp::BufferMap& buffers();

  void after_launch(const HostLaunch& l, const HostBindings& loops) override;

  void write(Json& j) const;

 private:
  UOp program_;
  interp::BufferMap buffers_;
  std::vector<Series> order_;
  std::map<std::string, size_t> at_;

  Series& series(UOp b);

  // Halves the frames kept so far and from now on keeps every other launch.
  static void thin(Series& s);

  // At most kMaxFrames evenly spaced frames, the last one included.
  static std::vector<size_t> picked(const Series& s);
};

// Runs the program on the interpreter, recording the buffers after every host-loop launch. The
// buffers the program writes start uninitialized unless in `given` (so a scan visibly fills its
// output); if that run fails (the program reads one first), it runs on the full inputs.
Timeline record_timeline(UOp program, const interp::BufferMap& inputs, const std::set<std::string>& given);

}  // namespace ow::cli
