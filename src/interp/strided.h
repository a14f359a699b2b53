// Strided walks shared by the interpreter's kernels (elementwise.cpp, reductions.cpp, copies.cpp):
// private to src/interp. walk visits the innermost rows of views; map_n applies a function
// elementwise over them; combine merges the inputs' masks into an output's.
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "interp/value.h"

namespace ow::interp {

// Calls inner(offsets, last_strides, n) once per innermost row of `shape`, where offsets[k] is
// the element offset of operand k at the row's start. Operands are given by their strides.
// Size-1 axes are dropped and axes that are contiguous for every operand are merged, so rows
// are as long as the layouts allow.
template <size_t K, class Inner>
void walk(const std::vector<int64_t>& shape, const std::array<const std::vector<int64_t>*, K>& strides,
          std::array<int64_t, K> offs, Inner&& inner) {
  std::vector<int64_t> sh;
  std::vector<std::array<int64_t, K>> st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    std::array<int64_t, K> s;
    bool merge = !sh.empty();
    for (size_t k = 0; k < K; ++k) {
      s[k] = (*strides[k])[i];
      merge = merge && st.back()[k] == s[k] * shape[i];
    }
    if (merge) {
      sh.back() *= shape[i];
      st.back() = s;
    } else {
      sh.push_back(shape[i]);
      st.push_back(s);
    }
  }
  size_t nd = sh.size();
  if (nd == 0) {
    inner(offs, std::array<int64_t, K>{}, int64_t{1});
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    inner(offs, st[nd - 1], sh[nd - 1]);
    int d = static_cast<int>(nd) - 2;
    for (; d >= 0; --d) {
      size_t du = static_cast<size_t>(d);
      for (size_t k = 0; k < K; ++k) offs[k] += st[du][k];
      if (++idx[du] < sh[du]) break;
      for (size_t k = 0; k < K; ++k) offs[k] -= st[du][k] * sh[du];
      idx[du] = 0;
    }
    if (d < 0) return;
  }
}

// Applies f elementwise: out (contiguous) = f(in[0], in[1], ...), each input a strided view.
template <class R, class T, size_t N, class F>
void map_n(Value& out, const std::array<const Value*, N>& in, F f) {
  std::array<const std::vector<int64_t>*, N + 1> strides{&out.view.strides};
  std::array<int64_t, N + 1> offs{out.view.offset};
  for (size_t k = 0; k < N; ++k) {
    strides[k + 1] = &in[k]->view.strides;
    offs[k + 1] = in[k]->view.offset;
  }
  R* po = out.data->as<R>();
  std::array<const T*, N> pin;
  for (size_t k = 0; k < N; ++k) pin[k] = std::as_const(*in[k]->data).template as<T>();  // a read keeps counts (value.h)
  walk<N + 1>(out.view.shape, strides, offs, [&](const auto& o, const auto& s, int64_t n) {
    R* dst = po + o[0];
    bool unit = s[0] == 1;
    for (size_t k = 0; k < N; ++k) unit = unit && s[k + 1] == 1;
    if constexpr (N == 2) {
      const T* a = pin[0] + o[1];
      const T* b = pin[1] + o[2];
      if (unit) {
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
        return;
      }
      if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
        T bv = *b;
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i], bv);
        return;
      }
      if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
        T av = *a;
        for (int64_t i = 0; i < n; ++i) dst[i] = f(av, b[i]);
        return;
      }
    }
    if constexpr (N == 1) {
      const T* a = pin[0] + o[1];
      if (unit) {
        for (int64_t i = 0; i < n; ++i) dst[i] = f(a[i]);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      std::array<T, N> args;
      for (size_t k = 0; k < N; ++k) args[k] = pin[k][o[k + 1] + i * s[k + 1]];
      dst[i * s[0]] = std::apply(f, args);
    }
  });
}

// How combine merges masks: AnyPoison, an element is poison when any input's is; Footprint, an
// element is real data only when every shaped input has a footprint (else no mask at all).
enum class MaskRule { AnyPoison, Footprint };

// Combines masks (poison or footprint, `field`) of the inputs into the output's mask.
StoragePtr combine(MaskRule rule, const std::vector<const Value*>& in, StoragePtr Value::*field, const std::vector<int64_t>& shape);

}  // namespace ow::interp
