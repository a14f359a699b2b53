#include "backends/tiered.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "backends/program.h"

namespace ow::backend {

struct CcUpgrade::State {
  UOp lowered;
  RunOptions opts;
  std::thread worker;
  std::atomic<bool> done{false};  // the worker has finished (program or error is set)
  std::unique_ptr<Program> program;
  std::string error;
  std::vector<interp::BufferSpec> graph_specs;
  bool handed_over = false;  // graph_specs given to program (main thread only)
};

CcUpgrade::CcUpgrade(UOp lowered, const RunOptions& opts) : state_(std::make_shared<State>()) {
  state_->lowered = lowered;
  state_->opts = opts;
  state_->opts.backend = Backend::Cc;
}

CcUpgrade::~CcUpgrade() {
  if (state_->worker.joinable()) state_->worker.join();
}

void CcUpgrade::start() {
  State& s = *state_;
  if (s.worker.joinable() || s.done) return;
  s.worker = std::thread([&s] {
    try {
      s.program = std::make_unique<Program>(s.lowered, s.opts);  // renders and compiles everything
    } catch (const std::exception& e) {
      s.error = e.what();
    }
    s.done.store(true, std::memory_order_release);
  });
}

Program* CcUpgrade::ready() {
  State& s = *state_;
  if (!s.done.load(std::memory_order_acquire) || !s.program) return nullptr;
  if (!s.handed_over) {
    if (!s.graph_specs.empty()) s.program->graph_writes(s.graph_specs);
    s.handed_over = true;
  }
  return s.program.get();
}

std::string CcUpgrade::error() const { return state_->done.load(std::memory_order_acquire) ? state_->error : ""; }

void CcUpgrade::graph_writes(const std::vector<interp::BufferSpec>& graph_specs) { state_->graph_specs = graph_specs; }

}  // namespace ow::backend
