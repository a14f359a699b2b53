// A minimal JSON reader for `ow serve`'s request headers (reference/SERVE.md): the whole of JSON,
// read into a plain tree. Numbers are doubles (exact for integers up to 2^53, more than any
// byte count ow accepts).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace ow::cli {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  // Array: items. Object: items with keys[i] naming items[i], in the text's order. (Not a vector
  // of pairs: a pair of the still-incomplete JsonValue is not allowed, clang refuses it.)
  std::vector<JsonValue> items;
  std::vector<std::string> keys;

  const JsonValue* get(const std::string& key) const;  // an Object's member, or nullptr
};

// Throws ow::Error "malformed JSON at column C: what was expected".
JsonValue parse_json(const std::string& text);

}  // namespace ow::cli
