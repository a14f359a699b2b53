// A minimal JSON writer for `ow report`'s data blob (objects, arrays, strings, numbers, booleans),
// and the one JSON string escaper (`ow run --trace=json` writes its lines with it too).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace ow::cli {

// s as a JSON string literal, quotes included. '<', '>' and '&' are escaped too, so the text can
// sit inside a <script> element.
inline std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += static_cast<char>(c);
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else o += static_cast<char>(c);
  }
  return o + "\"";
}

class Json {
 public:
  Json& begin_obj() { return open('{'); }
  Json& end_obj() { return close('}'); }
  Json& begin_arr() { return open('['); }
  Json& end_arr() { return close(']'); }
  Json& key(const std::string& k) {
    comma();
    quote(k);
    os_ << ':';
    after_key_ = true;
    return *this;
  }
  Json& str(const std::string& s) {
    comma();
    quote(s);
    return *this;
  }
  Json& num(double v) {
    comma();
    if (!std::isfinite(v)) os_ << "null";
    else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.5g", v);
      os_ << buf;
    }
    return *this;
  }
  Json& integer(int64_t v) {  // exact, unlike num's 5 significant digits (ids, byte counts)
    comma();
    os_ << v;
    return *this;
  }
  Json& boolean(bool b) {
    comma();
    os_ << (b ? "true" : "false");
    return *this;
  }
  Json& null() {
    comma();
    os_ << "null";
    return *this;
  }
  Json& field(const std::string& k, const std::string& v) { return key(k).str(v); }
  Json& field(const std::string& k, double v) { return key(k).num(v); }
  std::string text() const { return os_.str(); }

 private:
  std::ostringstream os_;
  std::vector<bool> first_;
  bool after_key_ = false;

  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) os_ << ',';
      first_.back() = false;
    }
  }
  Json& open(char c) {
    comma();
    os_ << c;
    first_.push_back(true);
    return *this;
  }
  Json& close(char c) {
    os_ << c;
    first_.pop_back();
    return *this;
  }
  void quote(const std::string& s) { os_ << json_string(s); }
};

}  // namespace ow::cli
