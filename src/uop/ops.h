// The vocabulary of the IR: operations, axis types and op groups.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "uop/dtype.h"

namespace ow {

// X-macro so the enum, its names and the parser stay in one list.
#define OW_OPS(X)                                                                         \
  /* definitions and symbolic shapes */                                                   \
  X(DEFINE_GLOBAL) X(DEFINE_LOCAL) X(DEFINE_REG) X(DEFINE_VAR) X(BIND) X(SPECIAL)          \
  /* structure */                                                                         \
  X(NOOP) X(SINK) X(AFTER) X(GROUP) X(GEP) X(VECTORIZE)                                   \
  /* memory */                                                                            \
  X(INDEX) X(LOAD) X(STORE)                                                               \
  /* unary ALU */                                                                         \
  X(CAST) X(BITCAST) X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIPROCAL) X(NEG) X(TRUNC)         \
  /* binary ALU */                                                                        \
  X(ADD) X(MUL) X(SHL) X(SHR) X(IDIV) X(MAX) X(MOD) X(CMPLT) X(CMPNE) X(CMPEQ)            \
  X(XOR) X(OR) X(AND) X(THREEFRY) X(SUB) X(FDIV) X(POW)                                   \
  /* ternary ALU */                                                                       \
  X(WHERE) X(MULACC)                                                                      \
  /* control flow and constants */                                                        \
  X(BARRIER) X(RANGE) X(IF) X(END) X(ENDIF) X(CONST)                                      \
  /* tensor graph */                                                                      \
  X(UNIQUE) X(DEVICE) X(KERNEL) X(ASSIGN)                                                 \
  X(BUFFERIZE) X(COPY) X(BUFFER)                                                          \
  X(CONTIGUOUS) X(CONTIGUOUS_BACKWARD) X(DETACH)                                          \
  /* movement */                                                                          \
  X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(FLIP)                                \
  /* reductions */                                                                        \
  X(REDUCE_AXIS) X(REDUCE) X(REDUCE_BACKWARD)                                             \
  /* autodiff: GRADIENT(loss, x) is d(sum loss)/dx, expanded before anything else */      \
  X(GRADIENT)

enum class Ops : uint8_t {
#define OW_ENUM(name) name,
  OW_OPS(OW_ENUM)
#undef OW_ENUM
};

#define OW_COUNT(name) +1
inline constexpr size_t kNumOps = 0 OW_OPS(OW_COUNT);  // every op is below this
#undef OW_COUNT

std::string_view op_name(Ops op);
std::optional<Ops> op_from_name(std::string_view name);

// How a backend schedules a range's loop. Only OUTER changes meaning (write visibility).
enum class AxisType : uint8_t { GLOBAL, WARP, LOCAL, LOOP, GROUP_REDUCE, REDUCE, UPCAST, UNROLL, THREAD, OUTER };

std::string_view axis_name(AxisType t);
std::optional<AxisType> axis_from_name(std::string_view name);

// Op groups, as in tinygrad's GroupOp.
bool is_unary(Ops op);
bool is_binary(Ops op);
bool is_ternary(Ops op);
bool is_alu(Ops op);          // unary, binary or ternary
bool is_elementwise(Ops op);  // ALU plus CAST/BITCAST
bool is_movement(Ops op);
bool is_effect(Ops op);       // the tensor-level effects: STORE, END, GROUP, ASSIGN
// What the interpreter runs for its effect in a graph of either level: a tensor-level effect or a
// lowered program's KERNEL launch.
bool is_effect_or_launch(Ops op);
bool is_write(Ops op);        // STORE or ASSIGN: writes into its first source (a view of a buffer)
bool is_comparison(Ops op);
// An op that raises an error on some operands (S2.1): integer IDIV and MOD (a zero divisor),
// SHL and SHR (a count outside the width), signed-integer POW (a negative exponent).
bool can_fail(Ops op, DType operand);
bool is_commutative(Ops op);
int alu_arity(Ops op);        // 1, 2 or 3 for ALU ops, 0 otherwise

}  // namespace ow
