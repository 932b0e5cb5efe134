#pragma once
// Reference of rotary position embedding (Su et al. 2021, RoFormer), NeoX/Llama layout: the
// first rotary_dim channels of each head are rotated in pairs (i, i + rotary_dim/2) by the angle
// position * theta^(-2i/rotary_dim); the rest pass through (Pythia rotates 25%). x and y are
// [tokens, heads, head_dim]; positions [tokens] are explicit so that CP chunks rotate correctly.
// The per-element function is shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

// Row th = (token, head) of y. sign = +1 rotates forward; -1 applies the transpose (inverse)
// rotation, which is the backward.
template <class T>
SIXFOLD_HD void rope_row(const T* x, T* y, const int* positions, int heads, int head_dim, int rotary_dim, double theta,
                         double sign, long th) {
  const int half = rotary_dim / 2;
  const long base = th * head_dim;
  const double position = positions[th / heads];
  for (int i = 0; i < half; ++i) {
    const double angle = position * ::pow(theta, -2.0 * i / rotary_dim);
    const double c = ::cos(angle), s = sign * ::sin(angle);
    const double x1 = x[base + i], x2 = x[base + i + half];
    y[base + i] = T(x1 * c - x2 * s);
    y[base + i + half] = T(x2 * c + x1 * s);
  }
  for (int i = 2 * half; i < head_dim; ++i) y[base + i] = x[base + i];
}

template <class T>
void rope_forward_ref(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                      double theta) {
  for (long th = 0; th < long(tokens) * heads; ++th)
    rope_row(x, y, positions, heads, head_dim, rotary_dim, theta, 1.0, th);
}

// The rotation is orthogonal, so the gradient is the rotation by the opposite angle.
template <class T>
void rope_backward_ref(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim, int rotary_dim,
                       double theta) {
  for (long th = 0; th < long(tokens) * heads; ++th)
    rope_row(dy, dx, positions, heads, head_dim, rotary_dim, theta, -1.0, th);
}

}  // namespace sixfold
