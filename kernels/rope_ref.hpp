#pragma once
// CPU reference of rotary position embedding (Su et al. 2021, RoFormer), NeoX/Llama layout: the
// first rotary_dim channels of each head are rotated in pairs (i, i + rotary_dim/2) by the angle
// position * theta^(-2i/rotary_dim); the rest pass through (Pythia rotates 25%). x and y are
// [tokens, heads, head_dim]; positions [tokens] are explicit so that CP chunks rotate correctly.
#include <cmath>

namespace sixfold {

namespace detail {
// sign = +1 rotates forward; -1 applies the transpose (inverse) rotation, which is the backward.
template <class T>
void rope_rotate(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                 double theta, double sign) {
  const int half = rotary_dim / 2;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      const long base = (long(t) * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const double inv_freq = std::pow(theta, -2.0 * i / rotary_dim);
        const double angle = double(positions[t]) * inv_freq;
        const double c = std::cos(angle), s = sign * std::sin(angle);
        const double x1 = x[base + i], x2 = x[base + i + half];
        y[base + i] = T(x1 * c - x2 * s);
        y[base + i + half] = T(x2 * c + x1 * s);
      }
      for (int i = 2 * half; i < head_dim; ++i) y[base + i] = x[base + i];
    }
  }
}
}  // namespace detail

template <class T>
void rope_forward_ref(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim,
                      int rotary_dim, double theta) {
  detail::rope_rotate(x, y, positions, tokens, heads, head_dim, rotary_dim, theta, 1.0);
}

// The rotation is orthogonal, so the gradient is the rotation by the opposite angle.
template <class T>
void rope_backward_ref(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim,
                       int rotary_dim, double theta) {
  detail::rope_rotate(dy, dx, positions, tokens, heads, head_dim, rotary_dim, theta, -1.0);
}

}  // namespace sixfold
