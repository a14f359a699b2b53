// A recursive-descent JSON reader: one function per kind of value.
#include "json_read.h"

#include <cstdlib>

#include "uop/error.h"

namespace ow::cli {

const JsonValue* JsonValue::get(const std::string& key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

namespace {

class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  JsonValue document() {
    JsonValue v = value(0);
    space();
    if (i_ != s_.size()) fail("end of input after the value");
    return v;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& expected) const {
    throw Error("malformed JSON at column " + std::to_string(i_ + 1) + ": expected " + expected);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("'") + c + "'");
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("less nesting (at most 64 levels)");
    space();
    if (i_ >= s_.size()) fail("a value");
    char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    JsonValue v;
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.string = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = JsonValue::Kind::Number;
      v.number = number();
    } else if (word("true") || word("false")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = c == 't';
    } else if (!word("null")) {
      fail("a value");
    }
    return v;
  }

  bool word(const char* w) {
    std::string t(w);
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }

  double number() {
    const char* start = s_.c_str() + i_;
    char* end = nullptr;
    double d = std::strtod(start, &end);
    if (end == start) fail("a number");
    i_ += static_cast<size_t>(end - start);
    return d;
  }

  // `open`, then `item()` for each of the comma-separated items, then `close`.
  template <class F> void items(char open, char close, F&& item) {
    expect(open);
    if (eat(close)) return;
    do item();
    while (eat(','));
    expect(close);
  }

  JsonValue array(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::Array;
    items('[', ']', [&] { v.items.push_back(value(depth + 1)); });
    return v;
  }

  JsonValue object(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::Object;
    items('{', '}', [&] {
      space();
      if (i_ >= s_.size() || s_[i_] != '"') fail("a member name in double quotes");
      std::string key = string();
      expect(':');
      v.keys.push_back(key);
      v.items.push_back(value(depth + 1));
    });
    return v;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("no control characters inside a string (escape them)");
      if (c != '\\') out += c;
      else escape(out);
    }
    if (i_ >= s_.size()) fail("'\"' closing the string");
    ++i_;
    return out;
  }

  void escape(std::string& out) {
    if (i_ >= s_.size()) fail("an escape");
    char c = s_[i_++];
    switch (c) {
      case '"': case '\\': case '/': out += c; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': utf8(out, code_point()); return;
      default: --i_; fail("an escape (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
  }

  // \uXXXX, joined with a following \uXXXX when the two are a UTF-16 surrogate pair.
  unsigned code_point() {
    unsigned u = hex4();
    if (u >= 0xD800 && u < 0xDC00 && s_.compare(i_, 2, "\\u") == 0) {
      i_ += 2;
      unsigned low = hex4();
      if (low < 0xDC00 || low >= 0xE000) fail("a low surrogate after a high one");
      u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
    }
    return u;
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("four hex digits");
    unsigned u = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[i_++];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail("four hex digits");
      u = u * 16 + static_cast<unsigned>(d);
    }
    return u;
  }

  static void utf8(std::string& out, unsigned u) {
    auto put = [&](unsigned b) { out += static_cast<char>(b); };
    if (u < 0x80) put(u);
    else if (u < 0x800) put(0xC0 | (u >> 6)), put(0x80 | (u & 0x3F));
    else if (u < 0x10000) put(0xE0 | (u >> 12)), put(0x80 | ((u >> 6) & 0x3F)), put(0x80 | (u & 0x3F));
    else put(0xF0 | (u >> 18)), put(0x80 | ((u >> 12) & 0x3F)), put(0x80 | ((u >> 6) & 0x3F)), put(0x80 | (u & 0x3F));
  }
};

}  // namespace

JsonValue parse_json(const std::string& text) { return Reader(text).document(); }

}  // namespace ow::cli
