#pragma once
// Reference of AdamW (Loshchilov & Hutter 2019): decoupled weight decay applied to the
// parameter before the Adam update, with bias correction, in the order of torch.optim.AdamW.
// step counts from 1. The per-element function is shared with the device (host_device.hpp).
#include "kernels/host_device.hpp"

namespace sixfold {

struct AdamwStep {
  double lr, beta1, beta2, eps, weight_decay;
  double bias1, bias2;  // 1 - beta^step
};

inline AdamwStep adamw_step_of(double lr, double beta1, double beta2, double eps, double weight_decay, long step) {
  return {lr, beta1, beta2, eps, weight_decay, 1.0 - ::pow(beta1, double(step)), 1.0 - ::pow(beta2, double(step))};
}

template <class T>
SIXFOLD_HD void adamw_element(T* param, const T* grad, T* m, T* v, const AdamwStep& a, long i) {
  const double g = grad[i];
  const double mi = a.beta1 * m[i] + (1.0 - a.beta1) * g;
  const double vi = a.beta2 * v[i] + (1.0 - a.beta2) * g * g;
  m[i] = T(mi);
  v[i] = T(vi);
  double p = double(param[i]) * (1.0 - a.lr * a.weight_decay);
  p -= a.lr * (mi / a.bias1) / (::sqrt(vi / a.bias2) + a.eps);
  param[i] = T(p);
}

template <class T>
void adamw_ref(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
               double weight_decay, long step) {
  const AdamwStep a = adamw_step_of(lr, beta1, beta2, eps, weight_decay, step);
  for (long i = 0; i < n; ++i) adamw_element(param, grad, m, v, a, i);
}

}  // namespace sixfold
