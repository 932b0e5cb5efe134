#pragma once
// CPU reference of AdamW (Loshchilov & Hutter 2019): decoupled weight decay applied to the
// parameter before the Adam update, with bias correction, in the order of torch.optim.AdamW.
// step counts from 1.
#include <cmath>

namespace sixfold {

template <class T>
void adamw_ref(T* param, const T* grad, T* m, T* v, long n, double lr, double beta1, double beta2, double eps,
               double weight_decay, long step) {
  const double bias1 = 1.0 - std::pow(beta1, double(step));
  const double bias2 = 1.0 - std::pow(beta2, double(step));
  for (long i = 0; i < n; ++i) {
    const double g = grad[i];
    const double mi = beta1 * m[i] + (1.0 - beta1) * g;
    const double vi = beta2 * v[i] + (1.0 - beta2) * g * g;
    m[i] = T(mi);
    v[i] = T(vi);
    double p = double(param[i]) * (1.0 - lr * weight_decay);
    p -= lr * (mi / bias1) / (std::sqrt(vi / bias2) + eps);
    param[i] = T(p);
  }
}

}  // namespace sixfold
