#pragma once
// Reference of the MLP activations: SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer")
// and GELU with the tanh approximation (Hendrycks & Gimpel 2016, as GPT-2 and Megatron use it).
// The per-element functions are shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

namespace detail {
SIXFOLD_HD inline double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
// sqrt(2/pi) and 0.044715 are the constants of the tanh approximation in Hendrycks & Gimpel.
inline constexpr double kGeluC = 0.7978845608028654;
inline constexpr double kGeluA = 0.044715;
}  // namespace detail

// out = silu(gate) * up, silu(g) = g * sigmoid(g).
template <class T>
SIXFOLD_HD void swiglu_forward_element(const T* gate, const T* up, T* out, long i) {
  const double g = gate[i];
  out[i] = T(g * detail::sigmoid(g) * up[i]);
}

// d silu / dg = s + g s (1 - s).
template <class T>
SIXFOLD_HD void swiglu_backward_element(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long i) {
  const double g = gate[i], s = detail::sigmoid(g);
  dgate[i] = T(double(dout[i]) * up[i] * (s + g * s * (1.0 - s)));
  dup[i] = T(double(dout[i]) * g * s);
}

template <class T>
SIXFOLD_HD void gelu_forward_element(const T* x, T* y, long i) {
  const double v = x[i];
  const double t = ::tanh(detail::kGeluC * (v + detail::kGeluA * v * v * v));
  y[i] = T(0.5 * v * (1.0 + t));
}

template <class T>
SIXFOLD_HD void gelu_backward_element(const T* dy, const T* x, T* dx, long i) {
  const double v = x[i];
  const double t = ::tanh(detail::kGeluC * (v + detail::kGeluA * v * v * v));
  const double dinner = detail::kGeluC * (1.0 + 3.0 * detail::kGeluA * v * v);
  dx[i] = T(double(dy[i]) * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * dinner));
}

// Squared ReLU (So et al. 2021, Primer; Nemotron-4's MLP; Megatron's --squared-relu): max(x, 0)^2,
// whose derivative is 2 max(x, 0).
template <class T>
SIXFOLD_HD void squared_relu_forward_element(const T* x, T* y, long i) {
  const double v = x[i] > T(0) ? double(x[i]) : 0.0;
  y[i] = T(v * v);
}

template <class T>
SIXFOLD_HD void squared_relu_backward_element(const T* dy, const T* x, T* dx, long i) {
  const double v = x[i] > T(0) ? double(x[i]) : 0.0;
  dx[i] = T(double(dy[i]) * 2.0 * v);
}

template <class T>
void swiglu_forward_ref(const T* gate, const T* up, T* out, long n) {
  for (long i = 0; i < n; ++i) swiglu_forward_element(gate, up, out, i);
}
template <class T>
void swiglu_backward_ref(const T* dout, const T* gate, const T* up, T* dgate, T* dup, long n) {
  for (long i = 0; i < n; ++i) swiglu_backward_element(dout, gate, up, dgate, dup, i);
}
template <class T>
void gelu_forward_ref(const T* x, T* y, long n) {
  for (long i = 0; i < n; ++i) gelu_forward_element(x, y, i);
}
template <class T>
void gelu_backward_ref(const T* dy, const T* x, T* dx, long n) {
  for (long i = 0; i < n; ++i) gelu_backward_element(dy, x, dx, i);
}
template <class T>
void squared_relu_forward_ref(const T* x, T* y, long n) {
  for (long i = 0; i < n; ++i) squared_relu_forward_element(x, y, i);
}
template <class T>
void squared_relu_backward_ref(const T* dy, const T* x, T* dx, long n) {
  for (long i = 0; i < n; ++i) squared_relu_backward_element(dy, x, dx, i);
}

}  // namespace sixfold
