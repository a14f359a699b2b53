// What a graph expects of the buffers its caller gives it: one set of rules for every backend
// (interp::run and backend::Program::run both call check_inputs) and every `ow` command.
//
// A graph's buffers are named; names starting with '_' are temporaries a run makes for itself.
// Every other buffer is either
//   an input   the graph reads it and nothing writes it: the caller must give its data,
//   written    the graph stores into it: given data is its initial content; without data it
//              starts uninitialized (the interpreter tracks that per element, as poison).
// A name given that is no buffer of the graph is an error (a typo would otherwise leave the real
// input unset), as is data of the wrong dtype or size.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "interp/interp.h"

namespace ow::interp {

struct BufferSpec {
  std::string name;
  DType dtype;
  int64_t size = 0;
  std::vector<int64_t> shape;  // as the graph first views it (its first RESHAPE), else (size,)
  bool input = false;          // read and never written
};

// The graph's non-temporary buffers, in the order `ow print` numbers them, one per name.
std::vector<BufferSpec> graph_buffers(UOp root);

// Throws ow::Error naming the buffer: a given name that is no buffer of `graph` (graph_buffers)
// unless it is in `also_allowed` (e.g. output names a program writes in place), a dtype or size
// mismatch, or an input given no data (its message ends with missing_hint(name), if set).
void check_inputs(const std::vector<BufferSpec>& graph, const BufferMap& given, const std::vector<std::string>& also_allowed = {},
                  const std::function<std::string(const std::string&)>& missing_hint = {});

// The buffer of that name, or the error for an unknown name (with a "did you mean" and the list).
const BufferSpec& find_buffer(const std::vector<BufferSpec>& graph, const std::string& name);

// The entries of `all` that name buffers of `graph`, sharing their memory: what to pass a run of
// graph when `all` holds more (the Tensor API's store, a gradient check's inputs).
BufferMap buffers_for(UOp graph, const BufferMap& all);

// "out, vec, mats": the names of specs, for messages.
std::string names_text(const std::vector<BufferSpec>& specs, bool inputs_only = false);

}  // namespace ow::interp
