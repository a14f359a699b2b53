// Hand-written parser for the .uop format (grammar in reference/FORMAT.md). It never trusts
// its input: every failure is a ParseError at the offending line and column.
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "uop/error.h"
#include "uop/text.h"

namespace ow {

namespace {

constexpr int kMaxArgDepth = 32;
constexpr size_t kMaxTupleSize = 65536;  // args are small; a bigger tuple is a broken file

class Parser {
 public:
  Parser(const std::string& text, std::string file) : t_(text), file_(std::move(file)) {}

  ParsedGraph run() {
    index_definitions();
    ParsedGraph g;
    g.file = file_;
    UOp last;
    Loc last_loc;
    while (pos_ < t_.size()) {
      skip_ws();
      if (at_eol()) {
        next_line();
        continue;
      }
      Loc loc{line_, col(), "", ""};
      size_t start = pos_;
      auto [name, node] = statement();
      loc.name = name;
      loc.text = t_.substr(start, std::min<size_t>(pos_ - start, 120)) + (pos_ - start > 120 ? "..." : "");
      while (!loc.text.empty() && (loc.text.back() == ' ' || loc.text.back() == '\t')) loc.text.pop_back();
      g.where.emplace(node.get(), loc);
      last = node;
      last_loc = loc;
      next_line();
    }
    if (!last) throw ParseError(file_, 1, 1, "empty graph: expected at least one line like '%0 = CONST index () 1'");
    g.root = last;
    check_reachable(g);
    return g;
  }

 private:
  // ---- positions and errors ----
  int col() const { return static_cast<int>(pos_ - line_start_) + 1; }
  [[noreturn]] void error(const std::string& msg) const { throw ParseError(file_, line_, col(), msg); }
  // The error pointing at an earlier position of the line: the start of the word it is about.
  [[noreturn]] void error_at(size_t at, const std::string& msg) {
    pos_ = at;
    error(msg);
  }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\n'; }

  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\r')) ++pos_;
  }
  bool at_eol() const { return pos_ >= t_.size() || t_[pos_] == '\n' || t_[pos_] == '#'; }
  void next_line() {
    while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
    if (pos_ < t_.size()) ++pos_;
    ++line_;
    line_start_ = pos_;
  }
  void expect(char c, const char* what) {
    skip_ws();
    if (peek() != c) error(std::string("expected ") + what + ", found " + describe_here());
    ++pos_;
  }
  std::string describe_here() const {
    if (pos_ >= t_.size()) return "end of file";
    unsigned char c = static_cast<unsigned char>(t_[pos_]);
    if (c == '\n') return "end of line";
    if (c < 0x20 || c >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
    }
    return std::string("'") + static_cast<char>(c) + "'";
  }

  // Long tokens are cut in messages so an error stays one readable line.
  static std::string clip(const std::string& t) { return t.size() > 40 ? t.substr(0, 40) + "..." : t; }

  // ---- tokens ----
  static bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

  std::string word(const char* what) {
    skip_ws();
    size_t s = pos_;
    while (pos_ < t_.size() && (word_char(t_[pos_]) || t_[pos_] == '*')) ++pos_;
    if (s == pos_) error(std::string("expected ") + what + ", found " + describe_here());
    return t_.substr(s, pos_ - s);
  }

  std::string ref() {
    skip_ws();
    if (peek() != '%') error("expected a node reference like %3, found " + describe_here());
    size_t s = ++pos_;
    while (pos_ < t_.size() && word_char(t_[pos_])) ++pos_;
    if (s == pos_) error("expected a name after '%'");
    return t_.substr(s, pos_ - s);
  }

  // ---- statements ----
  std::pair<std::string, UOp> statement() {
    stmt_start_ = pos_;
    std::string name = ref();
    if (defined_.count(name)) error_at(pos_ - name.size() - 1, "%" + clip(name) + " is already defined at line " + std::to_string(defined_.at(name).first));
    expect('=', "'='");
    size_t op_pos = (skip_ws(), pos_);
    std::string opname = word("an op name such as ADD");
    auto op = op_from_name(opname);
    if (!op) error_at(op_pos, "unknown op '" + clip(opname) + "'");
    size_t dt_pos = (skip_ws(), pos_);
    std::string dtname = word("a dtype such as float32");
    auto dtype = dtype_from_string(dtname);
    if (!dtype)
      error_at(dt_pos, "unknown dtype '" + clip(dtname) + "' (expected " + dtype_names_text() + ")");
    std::vector<UOp> src = sources();
    Arg arg, tag;
    skip_ws();
    if (!at_eol() && !at_tag()) arg = parse_arg(0);
    skip_ws();
    if (at_tag()) {
      pos_ += 4;
      tag = parse_arg(0);
    }
    skip_ws();
    if (!at_eol()) error("expected end of line, found " + describe_here());
    // A float32 constant is the float nearest the written number, as UOp::cnst makes it.
    if (*op == Ops::CONST && dtype->scalar == Scalar::Float32 && arg.is<double>()) arg = Arg(static_cast<double>(static_cast<float>(arg.as<double>())));
    UOp node;
    try {
      node = UOp::make(*op, *dtype, std::move(src), std::move(arg), std::move(tag));
    } catch (const InternalError&) {
      throw;  // outerworld's bug: reported as one (ow.cpp), not handled here
    } catch (const Error& e) {  // building ran an analysis that refused the node
      error_at(stmt_start_, e.what());
    }
    defined_.emplace(name, std::make_pair(line_, node));
    return {name, node};
  }

  bool at_tag() const { return t_.compare(pos_, 4, "tag=") == 0; }

  std::vector<UOp> sources() {
    expect('(', "'(' starting the source list");
    std::vector<UOp> src;
    skip_ws();
    if (peek() == ')') {
      ++pos_;
      return src;
    }
    while (true) {
      size_t at = (skip_ws(), pos_);
      std::string name = ref();
      auto it = defined_.find(name);
      if (it == defined_.end()) {
        pos_ = at;
        auto later = later_.find(name);
        if (later != later_.end() && later->second > line_)
          error("%" + clip(name) + " is used before its definition on line " + std::to_string(later->second) +
                " (sources must come first; a reference to a later line would make a cycle)");
        if (later != later_.end())
          error("%" + clip(name) + " refers to itself: a node cannot be its own source (cycle)");
        error("undefined reference %" + clip(name));
      }
      src.push_back(it->second.second);
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return src;
      }
      error("expected ',' or ')' in the source list, found " + describe_here());
    }
  }

  // ---- args ----
  Arg parse_arg(int depth) {
    if (depth > kMaxArgDepth) error("arg nested deeper than " + std::to_string(kMaxArgDepth) + " tuples");
    skip_ws();
    char c = peek();
    if (c == '(') return tuple(depth);
    if (c == '"') return string();
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return number();
    if (std::isalpha(static_cast<unsigned char>(c))) return named();
    error("expected an arg (number, \"string\", true/false, Ops.X, AxisType.X or a tuple), found " + describe_here());
  }

  Arg tuple(int depth) {
    ++pos_;
    ArgTuple items;
    skip_ws();
    if (peek() == ')') {
      ++pos_;
      return Arg(std::move(items));
    }
    while (true) {
      if (items.size() == kMaxTupleSize) error("tuple has more than " + std::to_string(kMaxTupleSize) + " elements");
      items.push_back(parse_arg(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
        if (peek() == ')') {
          ++pos_;
          return Arg(std::move(items));
        }
        continue;
      }
      if (peek() == ')') {
        if (items.size() == 1) error("a one-element tuple needs a trailing comma: (x,)");
        ++pos_;
        return Arg(std::move(items));
      }
      error("expected ',' or ')' in a tuple, found " + describe_here());
    }
  }

  Arg string() {
    ++pos_;
    std::string s;
    while (true) {
      if (pos_ >= t_.size() || t_[pos_] == '\n') error("unterminated string");
      char c = t_[pos_++];
      if (c == '"') return Arg(s);
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        --pos_;
        error("control character in a string (write it as \\xHH)");
      }
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = peek();
      ++pos_;
      if (e == '"' || e == '\\') s += e;
      else if (e == 'n') s += '\n';
      else if (e == 'x' && pos_ + 2 <= t_.size() && std::isxdigit(static_cast<unsigned char>(t_[pos_])) && std::isxdigit(static_cast<unsigned char>(t_[pos_ + 1]))) {
        s += static_cast<char>(std::stoi(t_.substr(pos_, 2), nullptr, 16));
        pos_ += 2;
      } else {
        --pos_;
        error("unknown escape in a string (use \\\", \\\\, \\n or \\xHH)");
      }
    }
  }

  Arg number() {
    size_t s = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    for (const char* w : {"inf", "nan"}) {
      if (t_.compare(pos_, 3, w) != 0 || (pos_ + 3 < t_.size() && word_char(t_[pos_ + 3]))) continue;
      pos_ += 3;
      double v = w[0] == 'i' ? INFINITY : NAN;
      return Arg(t_[s] == '-' ? -v : v);
    }
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '.' ||
                                ((t_[pos_] == '-' || t_[pos_] == '+') && (t_[pos_ - 1] == 'e' || t_[pos_ - 1] == 'E'))))
      ++pos_;
    std::string tok = t_.substr(s, pos_ - s);
    const char* b = tok.data() + (tok[0] == '+' ? 1 : 0);
    const char* e = tok.data() + tok.size();
    bool is_float = tok.find_first_of(".eE") != std::string::npos;
    if (is_float) {
      double d = 0;
      auto [p, ec] = std::from_chars(b, e, d);
      pos_ = s;
      if (ec == std::errc::result_out_of_range) error("number '" + clip(tok) + "' is out of range for float64");
      if (ec != std::errc() || p != e) error("malformed number '" + clip(tok) + "'");
      pos_ = s + tok.size();
      return Arg(d);
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) error_at(s, "integer '" + tok.substr(0, 40) + (tok.size() > 40 ? "..." : "") + "' does not fit in 64 bits");
    if (ec != std::errc() || p != e) error_at(s, "malformed number '" + tok.substr(0, 40) + "'");
    return Arg(v);
  }

  Arg named() {
    size_t s = pos_;
    while (pos_ < t_.size() && word_char(t_[pos_])) ++pos_;
    std::string w = t_.substr(s, pos_ - s);
    if (w == "true") return Arg(true);
    if (w == "false") return Arg(false);
    if (w == "None") return Arg();
    if (w == "inf") return Arg(INFINITY);
    if (w == "nan") return Arg(NAN);
    if (w.rfind("Ops.", 0) == 0)
      if (auto op = op_from_name(w.substr(4))) return Arg(*op);
    if (w.rfind("AxisType.", 0) == 0)
      if (auto ax = axis_from_name(w.substr(9))) return Arg(*ax);
    error_at(s, "unknown name '" + w.substr(0, 40) + "' in an arg (expected true, false, None, inf, nan, Ops.X or AxisType.X)");
  }

  // ---- whole-file checks ----
  void index_definitions() {
    size_t p = 0;
    int line = 1;
    while (p < t_.size()) {
      size_t e = t_.find('\n', p);
      if (e == std::string::npos) e = t_.size();
      size_t q = p;
      while (q < e && (t_[q] == ' ' || t_[q] == '\t')) ++q;
      if (q < e && t_[q] == '%') {
        size_t s = ++q;
        while (q < e && word_char(t_[q])) ++q;
        later_.emplace(t_.substr(s, q - s), line);
      }
      p = e + 1;
      ++line;
    }
  }

  void check_reachable(const ParsedGraph& g) const {
    std::unordered_set<const UOpNode*> live;
    for (UOp u : toposort(g.root)) live.insert(u.get());
    const Loc* first = nullptr;  // report the earliest dead line, so the message is deterministic
    for (const auto& [name, def] : defined_) {
      if (live.count(def.second.get())) continue;
      const Loc& loc = g.where.at(def.second.get());
      if (!first || loc.line < first->line) first = &loc;
    }
    if (first)
      throw ParseError(file_, first->line, first->col, "%" + clip(first->name) + " is not used by the root (the last line); remove it or add it to the SINK");
  }

  const std::string& t_;
  std::string file_;
  size_t pos_ = 0, line_start_ = 0, stmt_start_ = 0;
  int line_ = 1;
  std::unordered_map<std::string, std::pair<int, UOp>> defined_;
  std::unordered_map<std::string, int> later_;  // first line defining each name, from a pre-scan
};

}  // namespace

ParsedGraph parse_graph(const std::string& text, const std::string& file) { return Parser(text, file).run(); }

std::string ParsedGraph::line_of(UOp u) const {
  auto it = where.find(u.get());
  if (it == where.end()) return std::string(op_name(u->op)) + " (created during evaluation)";
  return file + ":" + std::to_string(it->second.line) + ": " + it->second.text;
}

void verify_parsed(const ParsedGraph& g, const VerifyOptions& opts) {
  auto issues = verify(g.root, opts);
  if (issues.empty()) return;
  const VerifyIssue& i = issues.front();
  const Loc& loc = g.where.at(i.node.get());
  throw ParseError(g.file, loc.line, loc.col, i.rule + ": " + i.message + " (in " + loc.text + ")");
}

}  // namespace ow
