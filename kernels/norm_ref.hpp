#pragma once
// CPU reference of RMSNorm (Zhang & Sennrich 2019) and LayerNorm (Ba et al. 2016), forward and
// backward. Row-major [rows, cols]; no allocation; accumulation in double so that the float
// reference is as exact as it can be. These are the oracle of the CUDA kernels.
#include <cmath>

namespace sixfold {

// y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps); rstd [rows] is saved for backward.
template <class T>
void rmsnorm_forward_ref(const T* x, const T* w, T* y, T* rstd, int rows, int cols, T eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + long(r) * cols;
    double sum_sq = 0;
    for (int c = 0; c < cols; ++c) sum_sq += double(xr[c]) * xr[c];
    const double rs = 1.0 / std::sqrt(sum_sq / cols + double(eps));
    rstd[r] = T(rs);
    T* yr = y + long(r) * cols;
    for (int c = 0; c < cols; ++c) yr[c] = T(double(xr[c]) * rs * w[c]);
  }
}

// dx = rstd * (g - xhat * mean(g * xhat)) with g = dy * w, xhat = x * rstd; dw_accum += dy * xhat.
template <class T>
void rmsnorm_backward_ref(const T* dy, const T* x, const T* w, const T* rstd, T* dx, T* dw_accum, int rows,
                          int cols) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + long(r) * cols;
    const T* dyr = dy + long(r) * cols;
    const double rs = rstd[r];
    double dot = 0;
    for (int c = 0; c < cols; ++c) dot += double(dyr[c]) * w[c] * xr[c] * rs;
    const double mean_dot = dot / cols;
    T* dxr = dx + long(r) * cols;
    for (int c = 0; c < cols; ++c) {
      const double xhat = xr[c] * rs;
      dxr[c] = T(rs * (double(dyr[c]) * w[c] - xhat * mean_dot));
      dw_accum[c] += T(double(dyr[c]) * xhat);
    }
  }
}

// y = (x - mean) * rstd * w + b; mean and rstd [rows] are saved for backward.
template <class T>
void layernorm_forward_ref(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int rows, int cols,
                           T eps) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + long(r) * cols;
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    const double mu = sum / cols;
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / std::sqrt(var / cols + double(eps));
    mean[r] = T(mu);
    rstd[r] = T(rs);
    T* yr = y + long(r) * cols;
    for (int c = 0; c < cols; ++c) yr[c] = T((xr[c] - mu) * rs * w[c] + b[c]);
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w; dw += dy * xhat; db += dy.
template <class T>
void layernorm_backward_ref(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx,
                            T* dw_accum, T* db_accum, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + long(r) * cols;
    const T* dyr = dy + long(r) * cols;
    const double mu = mean[r], rs = rstd[r];
    double sum_g = 0, sum_gx = 0;
    for (int c = 0; c < cols; ++c) {
      const double g = double(dyr[c]) * w[c];
      sum_g += g;
      sum_gx += g * (xr[c] - mu) * rs;
    }
    const double mean_g = sum_g / cols, mean_gx = sum_gx / cols;
    T* dxr = dx + long(r) * cols;
    for (int c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - mu) * rs;
      dxr[c] = T(rs * (double(dyr[c]) * w[c] - mean_g - xhat * mean_gx));
      dw_accum[c] += T(double(dyr[c]) * xhat);
      db_accum[c] += dyr[c];
    }
  }
}

}  // namespace sixfold
