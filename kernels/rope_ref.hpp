#pragma once
// Reference of rotary position embedding (Su et al. 2021, RoFormer), NeoX/Llama layout: the
// first rotary_dim channels of each head are rotated in pairs (i, i + rotary_dim/2) by the angle
// position * theta^(-2i/rotary_dim); the rest pass through (Pythia rotates 25%). x and y are
// [tokens, heads, head_dim]; positions [tokens] are explicit so that CP chunks rotate correctly.
// The per-element function is shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

// Element e of y (index into [tokens, heads, head_dim]). sign = +1 rotates forward; -1 applies
// the transpose (inverse) rotation, which is the backward.
template <class T>
SIXFOLD_HD void rope_element(const T* x, T* y, const int* positions, int heads, int head_dim, int rotary_dim,
                             double theta, double sign, long e) {
  const int half = rotary_dim / 2;
  const long th = e / head_dim;
  const int i = int(e % head_dim);
  if (i >= 2 * half) {
    y[e] = x[e];
    return;
  }
  const long base = th * head_dim;
  const int p = i < half ? i : i - half;
  const double angle = double(positions[th / heads]) * ::pow(theta, -2.0 * p / rotary_dim);
  const double c = ::cos(angle), s = sign * ::sin(angle);
  const double x1 = x[base + p], x2 = x[base + p + half];
  y[e] = T(i < half ? x1 * c - x2 * s : x2 * c + x1 * s);
}

template <class T>
void rope_forward_ref(const T* x, T* y, const int* positions, int tokens, int heads, int head_dim,
                      int rotary_dim, double theta) {
  for (long e = 0; e < long(tokens) * heads * head_dim; ++e)
    rope_element(x, y, positions, heads, head_dim, rotary_dim, theta, 1.0, e);
}

// The rotation is orthogonal, so the gradient is the rotation by the opposite angle.
template <class T>
void rope_backward_ref(const T* dy, T* dx, const int* positions, int tokens, int heads, int head_dim,
                       int rotary_dim, double theta) {
  for (long e = 0; e < long(tokens) * heads * head_dim; ++e)
    rope_element(dy, dx, positions, heads, head_dim, rotary_dim, theta, -1.0, e);
}

}  // namespace sixfold
