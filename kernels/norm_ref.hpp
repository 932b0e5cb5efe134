#pragma once
// Reference of RMSNorm (Zhang & Sennrich 2019) and LayerNorm (Ba et al. 2016), forward and
// backward. Row-major [rows, cols]; no allocation; accumulation in double so that the float
// reference is as exact as it can be. The _row/_column functions are shared with the device
// (host_device.hpp); the _ref loops over them are the oracle of the CUDA kernels.
#include "kernels/host_device.hpp"

namespace sixfold {

// y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps); rstd [rows] is saved for backward.
template <class T>
SIXFOLD_HD void rmsnorm_forward_row(const T* x, const T* w, T* y, T* rstd, long r, int cols, T eps) {
  const T* xr = x + r * cols;
  double sum_sq = 0;
  for (int c = 0; c < cols; ++c) sum_sq += double(xr[c]) * xr[c];
  const double rs = 1.0 / ::sqrt(sum_sq / cols + double(eps));
  rstd[r] = T(rs);
  T* yr = y + r * cols;
  for (int c = 0; c < cols; ++c) yr[c] = T(double(xr[c]) * rs * w[c]);
}

// dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * w, xhat = x * rstd.
template <class T>
SIXFOLD_HD void rmsnorm_backward_row(const T* dy, const T* x, const T* w, const T* rstd, T* dx, long r, int cols) {
  const T* xr = x + r * cols;
  const T* dyr = dy + r * cols;
  const double rs = rstd[r];
  double dot = 0;
  for (int c = 0; c < cols; ++c) dot += double(dyr[c]) * w[c] * xr[c] * rs;
  const double mean_dot = dot / cols;
  T* dxr = dx + r * cols;
  for (int c = 0; c < cols; ++c) dxr[c] = T(rs * (double(dyr[c]) * w[c] - xr[c] * rs * mean_dot));
}

// dw_accum[c] += sum over rows of dy * xhat (rows in order).
template <class T>
SIXFOLD_HD void rmsnorm_weight_grad_column(const T* dy, const T* x, const T* rstd, T* dw_accum, int rows, int cols,
                                           int c) {
  for (int r = 0; r < rows; ++r) {
    const long i = long(r) * cols + c;
    dw_accum[c] += T(double(dy[i]) * (x[i] * double(rstd[r])));
  }
}

template <class T>
void rmsnorm_forward_ref(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) {
  for (int r = 0; r < rows; ++r) rmsnorm_forward_row(x, w, y, rstd, r, cols, eps);
}

template <class T>
void rmsnorm_backward_ref(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows, int cols) {
  for (int r = 0; r < rows; ++r) rmsnorm_backward_row(dy, x, w, rstd, dx, r, cols);
  for (int c = 0; c < cols; ++c) rmsnorm_weight_grad_column(dy, x, rstd, dw_accum, rows, cols, c);
}

// y = (x - mean) * rstd * w + b; mean and rstd [rows] are saved for backward.
template <class T>
SIXFOLD_HD void layernorm_forward_row(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, long r, int cols,
                                      T eps) {
  const T* xr = x + r * cols;
  double sum = 0;
  for (int c = 0; c < cols; ++c) sum += xr[c];
  const double mu = sum / cols;
  double var = 0;
  for (int c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
  const double rs = 1.0 / ::sqrt(var / cols + double(eps));
  mean[r] = T(mu);
  rstd[r] = T(rs);
  T* yr = y + r * cols;
  for (int c = 0; c < cols; ++c) yr[c] = T((xr[c] - mu) * rs * w[c] + b[c]);
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
template <class T>
SIXFOLD_HD void layernorm_backward_row(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, long r,
                                       int cols) {
  const T* xr = x + r * cols;
  const T* dyr = dy + r * cols;
  const double mu = mean[r], rs = rstd[r];
  double sum_g = 0, sum_gx = 0;
  for (int c = 0; c < cols; ++c) {
    const double g = double(dyr[c]) * w[c];
    sum_g += g;
    sum_gx += g * (xr[c] - mu) * rs;
  }
  const double mean_g = sum_g / cols, mean_gx = sum_gx / cols;
  T* dxr = dx + r * cols;
  for (int c = 0; c < cols; ++c) dxr[c] = T(rs * (double(dyr[c]) * w[c] - mean_g - (xr[c] - mu) * rs * mean_gx));
}

// dw_accum[c] += sum of dy * xhat; db_accum[c] += sum of dy (rows in order).
template <class T>
SIXFOLD_HD void layernorm_param_grad_column(const T* dy, const T* x, const T* mean, const T* rstd, T* dw_accum,
                                            T* db_accum, int rows, int cols, int c) {
  for (int r = 0; r < rows; ++r) {
    const long i = long(r) * cols + c;
    dw_accum[c] += T(double(dy[i]) * ((x[i] - double(mean[r])) * double(rstd[r])));
    db_accum[c] += dy[i];
  }
}

template <class T>
void layernorm_forward_ref(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols, T eps) {
  for (int r = 0; r < rows; ++r) layernorm_forward_row(x, w, b, y, mean, rstd, r, cols, eps);
}

template <class T>
void layernorm_backward_ref(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw_accum,
                            T* db_accum, int rows, int cols) {
  for (int r = 0; r < rows; ++r) layernorm_backward_row(dy, x, w, mean, rstd, dx, r, cols);
  for (int c = 0; c < cols; ++c) layernorm_param_grad_column(dy, x, mean, rstd, dw_accum, db_accum, rows, cols, c);
}

}  // namespace sixfold
