#include "tensor/random.h"

#include <cmath>

namespace ow {

uint64_t Random::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float Random::uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

float Random::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  double u1 = (static_cast<double>(next() >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
  double u2 = static_cast<double>(next() >> 11) / 9007199254740992.0;
  double r = std::sqrt(-2.0 * std::log(u1)), t = 6.283185307179586 * u2;
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return static_cast<float>(r * std::cos(t));
}

Random& random_generator() {
  static Random r;
  return r;
}

}  // namespace ow
