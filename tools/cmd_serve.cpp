// ow serve: a long-lived worker for other programs (the Python package, python/outerworld).
// Requests arrive on stdin and responses leave on stdout, one JSON header line each followed by
// raw .npy bytes (reference/SERVE.md). Parsed graphs and their compiled kernels are cached per
// graph text and backend, so a caller running one graph many times compiles it once.
// A bad request gets an error response; the worker ends only at the end of its input.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <thread>

#include "backends/program.h"
#include "grad/error_bound.h"
#include "grad/gradient.h"
#include "cli.h"
#include "json/json.h"
#include "json/json_read.h"
#include "uop/error.h"

namespace ow::cli {

namespace {

using Kind = JsonValue::Kind;

// The input ended inside a request's payload: answered, then the worker stops.
// The kind of a user-level error, as the protocol names it (reference/SERVE.md).
struct Truncated : Error {
  using Error::Error;
};

struct Response {
  std::string header;                 // one JSON object, without the newline
  std::vector<std::string> payloads;  // raw bytes after it, as the header lists them
};

// A parsed graph, and its compiled form once a run needed it.
struct Entry {
  ParsedGraph graph;
  std::vector<interp::BufferSpec> specs;
  std::unique_ptr<backend::CompiledGraph> compiled;  // none for backend interp
  UOp bounded;                                        // with error bounds (made on first use)
  uint64_t launches = 0;                              // kernel launches of the current run
};

struct Stats {
  uint64_t requests = 0, runs = 0, cache_hits = 0, cache_misses = 0, compiles = 0;
};

// ---- reading a request's fields: each wrong type is an Error naming the field ----

const JsonValue* field(const JsonValue& h, const std::string& key, Kind kind, const char* what) {
  const JsonValue* v = h.get(key);
  if (v && v->kind != kind) throw Error("request field '" + key + "' must be " + what);
  return v;
}

std::string text_field(const JsonValue& h, const std::string& key, const std::string& fallback) {
  const JsonValue* v = field(h, key, Kind::String, "a string");
  return v ? v->string : fallback;
}

bool bool_field(const JsonValue& h, const std::string& key) {
  const JsonValue* v = field(h, key, Kind::Bool, "true or false");
  return v && v->boolean;
}

struct InputHeader {
  std::string name;
  size_t bytes;
};

// "inputs": [{"name": .., "bytes": N}, ...]: what the payload after the header holds.
std::vector<InputHeader> input_headers(const JsonValue& h) {
  std::vector<InputHeader> r;
  const JsonValue* list = field(h, "inputs", Kind::Array, "a list of {\"name\": ..., \"bytes\": N}");
  if (!list) return r;
  for (const JsonValue& x : list->items) {
    const JsonValue* name = x.get("name");
    const JsonValue* bytes = x.get("bytes");
    if (!name || name->kind != Kind::String || !bytes || bytes->kind != Kind::Number || bytes->number < 0 || bytes->number > double(int64_t{1} << 40) ||
        bytes->number != static_cast<double>(static_cast<size_t>(bytes->number)))
      throw Error("request field 'inputs' must be a list of {\"name\": ..., \"bytes\": N}");
    r.push_back({name->string, static_cast<size_t>(bytes->number)});
  }
  return r;
}

// Read in pieces, so a size far beyond what arrives is answered as a truncated request rather
// than allocated up front.
std::string read_bytes(std::istream& in, size_t n, const std::string& name) {
  std::string data;
  char chunk[1 << 16];
  while (data.size() < n) {
    in.read(chunk, static_cast<std::streamsize>(std::min(n - data.size(), sizeof chunk)));
    data.append(chunk, static_cast<size_t>(in.gcount()));
    if (!in) break;  // the end of the input
  }
  if (data.size() != n)
    throw Truncated("input '" + name + "': the request ended after " + std::to_string(data.size()) + " of its " + std::to_string(n) + " bytes");
  return data;
}

// ---- writing responses ----

void put_id(Json& j, const JsonValue* id) {
  j.key("id");
  if (!id) j.null();
  else if (id->kind == Kind::String) j.str(id->string);
  else if (id->kind == Kind::Number && id->number == static_cast<double>(static_cast<int64_t>(id->number))) j.integer(static_cast<int64_t>(id->number));
  else if (id->kind == Kind::Number) j.num(id->number);
  else j.null();
}

// `reason`: for kind "unsupported", which limit of the compiled path (reason_name, error.h); for
// "not-differentiable", which gradient limit (grad::reason_name, grad/gradient.h).
Response error_response(const JsonValue* id, const std::string& message, ErrorKind kind, const char* reason = nullptr) {
  Json j;
  j.begin_obj();
  put_id(j, id);
  j.key("ok").boolean(false).field("error", message).field("kind", std::string(kind_name(kind)));
  if (reason) j.field("reason", std::string(reason));
  j.end_obj();
  return {j.text(), {}};
}

void put_outputs(Json& j, Response& r, const std::vector<interp::Output>& outs) {
  j.key("outputs").begin_arr();
  for (const interp::Output& o : outs) {
    r.payloads.push_back(interp::npy_bytes(o.value));
    j.begin_obj().field("name", o.name).key("bytes").integer(static_cast<int64_t>(r.payloads.back().size())).end_obj();
  }
  j.end_arr();
}

void put_check(Json& j, bool agree, uint64_t launches, const std::string& compiler, const std::string& message) {
  j.key("check").begin_obj().key("agree").boolean(agree).key("launches").integer(static_cast<int64_t>(launches)).field("compiler", compiler);
  j.field("message", message).end_obj();
}

std::string agreement(uint64_t launches, const std::string& compiler, size_t outputs) {
  return std::to_string(launches) + " kernel launches (" + compiler + ") and " + std::to_string(outputs) + " output(s) agree with the interpreter bit for bit";
}

// ---- the worker ----

class Server {
 public:
  explicit Server(uint64_t max_steps) : max_steps_(max_steps) {}

  // Answers every request of `in` on `out` until the input ends.
  void serve(std::istream& in, FILE* out) {
    std::string line;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines: nothing asked
      bool stop = false;
      write(out, answer(line, in, stop));
      if (stop) return;
    }
  }

 private:
  static constexpr size_t kMaxEntries = 64;  // graphs kept compiled; the least recently used go first
  uint64_t max_steps_;
  std::map<std::string, Entry> cache_;
  std::list<std::string> recent_;  // cache keys, most recently used first
  Stats stats_;

  static void write(FILE* out, const Response& r) {
    std::fwrite(r.header.data(), 1, r.header.size(), out);
    std::fputc('\n', out);
    for (const std::string& p : r.payloads) std::fwrite(p.data(), 1, p.size(), out);
    std::fflush(out);
  }

  // One request, never throwing: every failure becomes an error response (as `ow` reports it).
  Response answer(const std::string& line, std::istream& in, bool& stop) {
    ++stats_.requests;
    JsonValue header;
    try {
      header = parse_json(line);
      if (header.kind != Kind::Object) throw Error("a request header must be a JSON object");
    } catch (const Error& e) {
      return error_response(nullptr, std::string("request header: ") + e.what(), ErrorKind::User);
    }
    const JsonValue* id = header.get("id");
    try {
      std::vector<std::string> payloads;
      for (const InputHeader& i : input_headers(header)) payloads.push_back(read_bytes(in, i.bytes, i.name));
      return dispatch(header, payloads);
    } catch (const Truncated& e) {
      stop = true;
      return error_response(id, e.what(), ErrorKind::User);
    } catch (const Error& e) {
      const auto* u = dynamic_cast<const Unsupported*>(&e);
      auto* nd = dynamic_cast<const grad::NotDifferentiable*>(&e);
      return error_response(id, e.what(), e.kind(), u ? reason_name(u->reason) : nd ? grad::reason_name(nd->reason) : nullptr);
    } catch (const std::bad_alloc&) {
      return error_response(id, "out of memory", ErrorKind::Internal);
    } catch (const std::exception& e) {
      return error_response(id, std::string("internal error: ") + e.what(), ErrorKind::Internal);
    }
  }

  Response dispatch(const JsonValue& h, const std::vector<std::string>& payloads) {
    std::string op = text_field(h, "op", "");
    if (op == "run" || op == "check") return run(h, payloads, op == "check");
    if (!payloads.empty()) throw Error("op '" + op + "' takes no inputs");
    if (op == "ping" || op == "version") return simple(h, [](Json& j) { j.field("version", std::string(OW_VERSION)); });
    if (op == "stats") return simple(h, [&](Json& j) { put_stats(j); });
    if (op == "sleep") return sleep(h);
    throw Error("unknown op '" + op + "' (ops: run, check, ping, version, stats, sleep)");
  }

  template <class F> Response simple(const JsonValue& h, F body) {
    Json j;
    j.begin_obj();
    put_id(j, h.get("id"));
    j.key("ok").boolean(true);
    body(j);
    j.end_obj();
    return {j.text(), {}};
  }

  void put_stats(Json& j) {
    auto n = [&](const char* k, uint64_t v) { j.key(k).integer(static_cast<int64_t>(v)); };
    n("requests", stats_.requests);
    n("runs", stats_.runs);
    n("cache_hits", stats_.cache_hits);
    n("cache_misses", stats_.cache_misses);
    n("compiles", stats_.compiles);
    n("cached_graphs", cache_.size());
  }

  // For tests of a worker dying mid-call: holds the request for "seconds".
  Response sleep(const JsonValue& h) {
    const JsonValue* s = field(h, "seconds", Kind::Number, "a number");
    std::this_thread::sleep_for(std::chrono::duration<double>(s ? s->number : 0));
    return simple(h, [](Json&) {});
  }

  // The cached entry for this graph text, backend and file name, parsed and verified on a miss.
  Entry& entry(const std::string& text, const std::string& file, const std::string& key) {
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ++stats_.cache_hits;
      recent_.remove(key);
      recent_.push_front(key);
      return it->second;
    }
    ++stats_.cache_misses;
    Entry e;
    e.graph = parse_graph(text, file);
    verify_parsed(e.graph);
    e.specs = interp::graph_buffers(e.graph.root);
    if (cache_.size() >= kMaxEntries) {
      cache_.erase(recent_.back());
      recent_.pop_back();
    }
    recent_.push_front(key);
    return cache_.emplace(key, std::move(e)).first->second;
  }

  static interp::BufferMap buffers(const Entry& e, const std::vector<InputHeader>& inputs, const std::vector<std::string>& payloads, bool flat) {
    interp::BufferMap b;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = inputs[i].name;
      if (b.count(name)) throw Error("input '" + name + "' is given twice");
      const interp::BufferSpec& spec = interp::find_buffer(e.specs, name);
      std::string where = "input '" + name + "'";
      b[name] = input_data(spec, interp::parse_npy(payloads[i], where), where, flat, "set flat_inputs");
    }
    interp::check_inputs(e.specs, b);
    return b;
  }

  Response run(const JsonValue& h, const std::vector<std::string>& payloads, bool check_op) {
    const JsonValue* graph = field(h, "graph", Kind::String, "the graph's text");
    if (!graph) throw Error("op 'run' needs a 'graph' (the .uop text)");
    using backend::Backend;
    Backend be = check_op ? Backend::Check : backend::parse_backend(text_field(h, "backend", "interp"));
    std::string compiler = text_field(h, "compiler", "tcc");
    Backend tier = backend::parse_backend(compiler, "compiler", backend::kCompilers);
    std::string file = text_field(h, "file", "<graph>");
    Entry& e = entry(graph->string, file, std::string(backend_name(be)) + "\n" + compiler + "\n" + file + "\n" + graph->string);
    bool bounds = bool_field(h, "error_bound");
    if (bounds && be != Backend::Interp) throw Error("error_bound runs on the interpreter (backend interp)");
    interp::BufferMap b = buffers(e, input_headers(h), payloads, bool_field(h, "flat_inputs"));
    ++stats_.runs;
    e.launches = 0;
    std::vector<interp::Output> outs;
    try {
      outs = be == Backend::Interp ? interpret(e, b, bounds) : compiled(e, be, tier).run(b);
    } catch (const backend::CheckMismatch& m) {
      if (!check_op) throw;
      return simple(h, [&](Json& j) { put_check(j, false, e.launches, compiler, m.what()); });
    }
    return respond(h, outs, [&](Json& j) {
      if (be == Backend::Check) put_check(j, true, e.launches, compiler, agreement(e.launches, compiler, outs.size()));
    });
  }

  template <class F> Response respond(const JsonValue& h, const std::vector<interp::Output>& outs, F extra) {
    Response r;
    Json j;
    j.begin_obj();
    put_id(j, h.get("id"));
    j.key("ok").boolean(true);
    put_outputs(j, r, outs);
    extra(j);
    j.end_obj();
    r.header = j.text();
    return r;
  }

  // As `ow run` does: a step budget, and errors naming the node's line in the graph text; with
  // `bounds`, the graph with its error bounds (ow run --error-bound).
  std::vector<interp::Output> interpret(Entry& e, interp::BufferMap& b, bool bounds) const {
    interp::Options o;
    o.max_evals = max_steps_;
    o.describe = [&](UOp u) { return e.graph.line_of(u); };
    if (bounds && !e.bounded) e.bounded = grad::with_error_bounds(grad::expand(e.graph.root));
    return interp::run(bounds ? e.bounded : e.graph.root, b, o);
  }

  // Lowered and compiled on first use.
  backend::CompiledGraph& compiled(Entry& e, backend::Backend be, backend::Backend compiler) {
    if (e.compiled) return *e.compiled;
    backend::RunOptions ro;
    ro.backend = be;
    ro.compiler = compiler;
    ro.max_launches = max_steps_;
    // Only check reports count launches: a hook on every launch would keep tcc and cc from
    // running their compiled host loops in one call.
    if (be == backend::Backend::Check) ro.on_launch = [&e](UOp, const auto&) { ++e.launches; };  // map entries never move
    e.compiled = std::make_unique<backend::CompiledGraph>(e.graph.root, ro);
    ++stats_.compiles;
    return *e.compiled;
  }
};

// Responses get stdout's file descriptor to themselves: anything else that prints to stdout
// (a library, a stray debug line) goes to stderr instead of corrupting the protocol.
FILE* protocol_output() {
  std::fflush(stdout);
  int fd = dup(STDOUT_FILENO);
  if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw Error("ow serve: cannot set up stdout");
  FILE* out = fdopen(fd, "wb");
  if (!out) throw Error("ow serve: cannot set up stdout");
  return out;
}

int cmd_serve(const Args& args) {
  po::options_description opts("options");
  add_budget_options(opts);
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_options("serve", "[--max-memory SIZE] [--max-steps N]\n\nrequests on stdin, responses on stdout: reference/SERVE.md", opts, pos, args, vm)) return 0;
  Server server(apply_budgets(vm));
  FILE* out = protocol_output();
  server.serve(std::cin, out);
  std::fclose(out);
  return 0;
}

}  // namespace

std::vector<Command> serve_commands() { return {{"serve", "a worker for other programs (Python): requests on stdin, responses on stdout", cmd_serve}}; }

}  // namespace ow::cli
