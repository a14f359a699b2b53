// Element types. A DType is a scalar kind, optionally a pointer to a buffer of `size` elements
// (kernel-level DEFINE_GLOBAL/INDEX produce pointers).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ow {

enum class Scalar : uint8_t { Void, Bool, Int32, Int64, Index, Float16, Float32, Float64, Uint32, Uint64 };

struct DType {
  Scalar scalar = Scalar::Void;
  bool ptr = false;
  int64_t size = -1;  // element count a pointer addresses; -1 when unknown or not a pointer

  constexpr DType() = default;
  constexpr DType(Scalar s) : scalar(s) {}  // NOLINT(google-explicit-constructor): dtypes read like values
  constexpr DType(Scalar s, bool p, int64_t n) : scalar(s), ptr(p), size(n) {}

  DType pointer(int64_t n) const { return DType(scalar, true, n); }
  DType base() const { return DType(scalar); }
  bool is_float() const { return !ptr && (scalar == Scalar::Float16 || scalar == Scalar::Float32 || scalar == Scalar::Float64); }
  // Integers, signed or not (as tinygrad's dtypes.is_int); is_unsigned() tells the two apart.
  bool is_int() const { return is_signed_int() || is_unsigned(); }
  bool is_signed_int() const { return !ptr && (scalar == Scalar::Int32 || scalar == Scalar::Int64 || scalar == Scalar::Index); }
  bool is_unsigned() const { return !ptr && (scalar == Scalar::Uint32 || scalar == Scalar::Uint64); }
  bool is_bool() const { return !ptr && scalar == Scalar::Bool; }
  bool is_index() const { return !ptr && scalar == Scalar::Index; }
  bool is_void() const { return !ptr && scalar == Scalar::Void; }
  int itemsize() const;

  friend bool operator==(const DType&, const DType&) = default;
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void};
inline constexpr DType bool_{Scalar::Bool};
inline constexpr DType int32{Scalar::Int32};
inline constexpr DType int64{Scalar::Int64};
inline constexpr DType index{Scalar::Index};
inline constexpr DType float16{Scalar::Float16};
inline constexpr DType float32{Scalar::Float32};
inline constexpr DType float64{Scalar::Float64};
inline constexpr DType uint32{Scalar::Uint32};
inline constexpr DType uint64{Scalar::Uint64};
}  // namespace dtypes

// Text form: "float32", pointers "float32*" or "float32*30".
std::string to_string(DType d);
std::optional<DType> dtype_from_string(std::string_view s);

}  // namespace ow
