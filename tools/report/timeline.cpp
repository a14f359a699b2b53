#include "report/timeline.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "backends/program.h"
#include "interp/compare.h"
#include "uop/args.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

constexpr int64_t kMaxCells = 64;  // heat maps are at most 64 x 64 cells
constexpr size_t kMaxFrames = 64;  // and at most 64 iterations per buffer

// The buffers a kernel stores to (its DEFINE_GLOBAL slots, bound to sources 1 + slot).
std::vector<UOp> stored_buffers(UOp kernel) {
  std::vector<UOp> out;
  for (UOp u : toposort(kernel->src[0]))
    if (u->op == Ops::STORE && u->src[0]->op == Ops::INDEX && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) {
      size_t src = 1 + static_cast<size_t>(u->src[0]->src[0]->arg.as<int64_t>());
      if (src < kernel->src.size() && kernel->src[src]->op == Ops::BUFFER) out.push_back(kernel->src[src]);
    }
  return out;
}

// Rows x cols of a buffer: the output view over it when the program has one (last dim = cols),
// else as square as possible.
std::pair<int64_t, int64_t> buffer_layout(UOp program, UOp buffer) {
  int64_t size = buffer_size(buffer);
  for (UOp u : toposort(program)) {
    if (u->op != Ops::RESHAPE || u->src[0] != buffer || u->shape.kind != ShapeInfo::Kind::Shaped || u->shape.dims.empty()) continue;
    UOp last = u->shape.dims.back();
    if (last->op != Ops::CONST) continue;
    int64_t cols = static_cast<int64_t>(last.const_value());
    if (cols > 0 && size % cols == 0) return {size / cols, cols};
  }
  int64_t cols = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(size)))));
  return {(size + cols - 1) / cols, cols};
}

// The buffer averaged into cell_rows x cell_cols blocks (uninitialized elements left out).
std::vector<double> snapshot(const interp::BufferData& b, const Series& s) {
  interp::Value v;
  v.dtype = b.dtype;
  v.view = interp::View::contiguous({b.data->size});
  v.data = b.data;
  const uint8_t* poison = b.poison ? b.poison->as<uint8_t>() : nullptr;
  std::vector<double> sum(s.cell_rows * s.cell_cols, 0.0), count(sum.size(), 0.0);
  for (int64_t i = 0; i < b.data->size; ++i) {
    if (poison && poison[i]) continue;
    int64_t r = i / s.cols, c = i % s.cols;
    size_t cell = static_cast<size_t>(r * s.cell_rows / s.rows * s.cell_cols + c * s.cell_cols / s.cols);
    sum[cell] += interp::get_element(v, i);
    count[cell] += 1;
  }
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = count[i] > 0 ? sum[i] / count[i] : NAN;
  return sum;
}

}  // namespace

Timeline::Timeline(UOp program, interp::BufferMap buffers)
    : program_(program), buffers_(std::move(buffers)) {

}

interp::BufferMap& Timeline::buffers() {
return buffers_;
}

void Timeline::after_launch(const HostLaunch& l, const HostBindings& loops) {
  if (loops.empty()) return;  // only launches inside host loops
  std::string label = l.name;
  for (auto& [r, v] : loops) label += " " + range_name(r) + "=" + std::to_string(v);
  for (UOp b : stored_buffers(l.kernel)) {
    auto it = buffers_.find(buffer_name(b));
    if (it == buffers_.end()) continue;  // a temporary of the run: not visible from here
    Series& s = series(b);
    if (s.seen++ % s.stride == 0) s.frames.push_back({label, snapshot(it->second, s)});
    if (s.frames.size() > 2 * kMaxFrames) thin(s);
  }
}

void Timeline::write(Json& j) const {
  j.begin_arr();
  for (const Series& s : order_) {
    j.begin_obj().field("buffer", s.buffer).field("rows", static_cast<double>(s.rows)).field("cols", static_cast<double>(s.cols));
    j.field("cellRows", static_cast<double>(s.cell_rows)).field("cellCols", static_cast<double>(s.cell_cols));
    j.field("launches", static_cast<double>(s.seen));
    j.key("frames").begin_arr();
    for (size_t f : picked(s)) {
      j.begin_obj().field("label", s.frames[f].label).key("cells").begin_arr();
      for (double c : s.frames[f].cells) j.num(c);
      j.end_arr().end_obj();
    }
    j.end_arr().end_obj();
  }
  j.end_arr();
}

Series& Timeline::series(UOp b) {
  auto [it, fresh] = at_.emplace(buffer_name(b), order_.size());
  if (fresh) {
    Series s;
    s.buffer = buffer_name(b);
    std::tie(s.rows, s.cols) = buffer_layout(program_, b);
    s.cell_rows = std::min(s.rows, kMaxCells);
    s.cell_cols = std::min(s.cols, kMaxCells);
    order_.push_back(std::move(s));
  }
  return order_[it->second];
}

void Timeline::thin(Series& s) {
  std::vector<Frame> kept;
  for (size_t i = 0; i < s.frames.size(); i += 2) kept.push_back(std::move(s.frames[i]));
  s.frames = std::move(kept);
  s.stride *= 2;
}

std::vector<size_t> Timeline::picked(const Series& s) {
  std::vector<size_t> out;
  size_t n = s.frames.size();
  for (size_t i = 0; i < std::min(n, kMaxFrames); ++i) out.push_back(n <= kMaxFrames ? i : i * (n - 1) / (kMaxFrames - 1));
  return out;
}

Timeline record_timeline(UOp program, const interp::BufferMap& inputs, const std::set<std::string>& given) {
  interp::BufferMap start = interp::copy_buffers(inputs);
  for (UOp k : toposort(program))
    if (k->op == Ops::KERNEL)
      for (UOp b : stored_buffers(k))
        if (!given.count(buffer_name(b))) start.erase(buffer_name(b));
  for (bool blank : {true, false}) {
    Timeline t(program, blank ? interp::copy_buffers(start) : interp::copy_buffers(inputs));
    backend::RunOptions ro;
    ro.backend = backend::Backend::Interp;
    ro.observer = &t;
    try {
      backend::run_program(program, t.buffers(), ro);
      t.note = blank ? "ran on the interpreter, buffers the program writes starting uninitialized" : "ran on the interpreter";
      return t;
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& e) {
      t.note = std::string("the lowered program fails on the interpreter: ") + e.what();
      if (!blank) return t;
    }
  }
  throw Error("unreachable");
}

}  // namespace ow::cli
