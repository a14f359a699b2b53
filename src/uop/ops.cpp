#include "uop/ops.h"

#include <array>

namespace ow {

namespace {
constexpr std::array kOpNames = {
#define OW_NAME(name) std::string_view(#name),
    OW_OPS(OW_NAME)
#undef OW_NAME
};
constexpr std::array kAxisNames = {std::string_view("GLOBAL"), std::string_view("WARP"),
                                   std::string_view("LOCAL"),  std::string_view("LOOP"),
                                   std::string_view("GROUP_REDUCE"), std::string_view("REDUCE"),
                                   std::string_view("UPCAST"), std::string_view("UNROLL"),
                                   std::string_view("THREAD"), std::string_view("OUTER")};
}  // namespace

std::string_view op_name(Ops op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<Ops> op_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<Ops>(i);
  return std::nullopt;
}

std::string_view axis_name(AxisType t) { return kAxisNames[static_cast<size_t>(t)]; }

std::optional<AxisType> axis_from_name(std::string_view name) {
  for (size_t i = 0; i < kAxisNames.size(); ++i)
    if (kAxisNames[i] == name) return static_cast<AxisType>(i);
  return std::nullopt;
}

bool is_unary(Ops op) {
  switch (op) {
    case Ops::EXP2: case Ops::LOG2: case Ops::SIN: case Ops::SQRT:
    case Ops::RECIPROCAL: case Ops::NEG: case Ops::TRUNC: return true;
    default: return false;
  }
}

bool is_binary(Ops op) {
  switch (op) {
    case Ops::ADD: case Ops::MUL: case Ops::SHL: case Ops::SHR: case Ops::IDIV: case Ops::MAX:
    case Ops::MOD: case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: case Ops::XOR: case Ops::OR:
    case Ops::AND: case Ops::THREEFRY: case Ops::SUB: case Ops::FDIV: case Ops::POW: return true;
    default: return false;
  }
}

bool is_ternary(Ops op) { return op == Ops::WHERE || op == Ops::MULACC; }
bool is_alu(Ops op) { return is_unary(op) || is_binary(op) || is_ternary(op); }
bool is_elementwise(Ops op) { return is_alu(op) || op == Ops::CAST || op == Ops::BITCAST; }

bool is_effect(Ops op) { return op == Ops::STORE || op == Ops::END || op == Ops::GROUP || op == Ops::ASSIGN; }
bool is_effect_or_launch(Ops op) { return is_effect(op) || op == Ops::KERNEL; }
bool is_write(Ops op) { return op == Ops::STORE || op == Ops::ASSIGN; }

bool can_fail(Ops op, DType operand) {
  if (!operand.is_int()) return false;
  if (op == Ops::POW) return operand.is_signed_int();
  return op == Ops::IDIV || op == Ops::MOD || op == Ops::SHL || op == Ops::SHR;
}

bool is_movement(Ops op) {
  switch (op) {
    case Ops::RESHAPE: case Ops::PERMUTE: case Ops::EXPAND:
    case Ops::PAD: case Ops::SHRINK: case Ops::FLIP: return true;
    default: return false;
  }
}

bool is_comparison(Ops op) { return op == Ops::CMPLT || op == Ops::CMPNE || op == Ops::CMPEQ; }

bool is_commutative(Ops op) {
  switch (op) {
    case Ops::ADD: case Ops::MUL: case Ops::MAX: case Ops::CMPNE: case Ops::CMPEQ:
    case Ops::XOR: case Ops::AND: case Ops::OR: return true;
    default: return false;
  }
}

int alu_arity(Ops op) { return is_unary(op) ? 1 : is_binary(op) ? 2 : is_ternary(op) ? 3 : 0; }

}  // namespace ow
