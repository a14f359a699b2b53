// A seeded generator whose output is the same on every platform (std::normal_distribution is
// implementation-defined, so we spell the transforms out).
#pragma once
#include <cstdint>

namespace ow {

class Random {
 public:
  void seed(uint64_t s) { state_ = s; has_spare_ = false; }
  uint64_t next();   // splitmix64
  float uniform();   // [0, 1) with 24 random bits
  float normal();    // Box-Muller in double, rounded to float

 private:
  uint64_t state_ = 0x5eed;
  bool has_spare_ = false;
  double spare_ = 0;
};

Random& random_generator();

}  // namespace ow
