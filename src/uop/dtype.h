// Element types. A DType is a scalar kind, optionally a pointer to a buffer of `size` elements
// (kernel-level DEFINE_GLOBAL/INDEX produce pointers). The value dtypes are tinygrad's fifteen
// (bool, the eight integers, fp8e4m3, fp8e5m2, float16, bfloat16, float32, float64) plus index;
// reference/SEMANTICS.md S2.1 defines arithmetic and conversions in each.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ow {

// New kinds are appended: the order is the names' table in dtype.cpp.
enum class Scalar : uint8_t {
  Void, Bool, Int32, Int64, Index, Float16, Float32, Float64, Uint32, Uint64,
  Int8, Uint8, Int16, Uint16, BFloat16, Fp8e4m3, Fp8e5m2,
};

struct DType {
  Scalar scalar = Scalar::Void;
  bool ptr = false;
  int64_t size = -1;  // element count a pointer addresses; -1 when unknown or not a pointer

  constexpr DType() = default;
  constexpr DType(Scalar s) : scalar(s) {}  // NOLINT(google-explicit-constructor): dtypes read like values
  constexpr DType(Scalar s, bool p, int64_t n) : scalar(s), ptr(p), size(n) {}

  DType pointer(int64_t n) const { return DType(scalar, true, n); }
  DType base() const { return DType(scalar); }
  bool is_float() const { return !ptr && (scalar == Scalar::Float32 || scalar == Scalar::Float64 || is_narrow_float()); }
  // The floats narrower than float32 (float16, bfloat16, the fp8s): stored as their bits,
  // computed by widening exactly to float32 and rounding each result back (S2.1).
  bool is_narrow_float() const {
    return !ptr && (scalar == Scalar::Float16 || scalar == Scalar::BFloat16 || scalar == Scalar::Fp8e4m3 || scalar == Scalar::Fp8e5m2);
  }
  // Integers, signed or not (as tinygrad's dtypes.is_int); is_unsigned() tells the two apart.
  bool is_int() const { return is_signed_int() || is_unsigned(); }
  bool is_signed_int() const {
    return !ptr && (scalar == Scalar::Int8 || scalar == Scalar::Int16 || scalar == Scalar::Int32 || scalar == Scalar::Int64 || scalar == Scalar::Index);
  }
  bool is_unsigned() const {
    return !ptr && (scalar == Scalar::Uint8 || scalar == Scalar::Uint16 || scalar == Scalar::Uint32 || scalar == Scalar::Uint64);
  }
  bool is_bool() const { return !ptr && scalar == Scalar::Bool; }
  bool is_index() const { return !ptr && scalar == Scalar::Index; }
  bool is_void() const { return !ptr && scalar == Scalar::Void; }
  int itemsize() const;

  friend bool operator==(const DType&, const DType&) = default;
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void};
inline constexpr DType bool_{Scalar::Bool};
inline constexpr DType int8{Scalar::Int8};
inline constexpr DType uint8{Scalar::Uint8};
inline constexpr DType int16{Scalar::Int16};
inline constexpr DType uint16{Scalar::Uint16};
inline constexpr DType int32{Scalar::Int32};
inline constexpr DType int64{Scalar::Int64};
inline constexpr DType index{Scalar::Index};
inline constexpr DType fp8e4m3{Scalar::Fp8e4m3};
inline constexpr DType fp8e5m2{Scalar::Fp8e5m2};
inline constexpr DType float16{Scalar::Float16};
inline constexpr DType bfloat16{Scalar::BFloat16};
inline constexpr DType float32{Scalar::Float32};
inline constexpr DType float64{Scalar::Float64};
inline constexpr DType uint32{Scalar::Uint32};
inline constexpr DType uint64{Scalar::Uint64};
}  // namespace dtypes

// Every value dtype (index and void aside), in tinygrad's order of width.
inline constexpr DType kValueDTypes[] = {dtypes::bool_, dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::uint16,
                                         dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::fp8e4m3,
                                         dtypes::fp8e5m2, dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64};

// The smallest and largest value of an integer dtype other than uint64 (bool: 0 and 1), and an
// integer reduced to it: the low bits, read signed or unsigned (two's complement wrap-around).
std::pair<int64_t, int64_t> int_limits(DType d);
int64_t wrap_int(DType d, uint64_t bits);

// Text form: "float32", pointers "float32*" or "float32*30".
std::string to_string(DType d);
std::optional<DType> dtype_from_string(std::string_view s);
// "void, bool, int8, ..., or a pointer like float32*10": what dtype_from_string accepts.
std::string dtype_names_text();

}  // namespace ow
