#pragma once
// Helpers of the GPU kernel tests: device buffers, bf16-exact random inputs (so the CPU
// reference sees exactly the values the GPU reads) and a relative error that fails loudly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda_kernels.hpp"

namespace sixfold::gpu_test {

using cuda::Bf16;

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count), data_(static_cast<T*>(cuda::device_alloc(count * sizeof(T)))) {}
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cuda::device_free(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return data_; }
  const T* get() const { return data_; }
  void upload(const std::vector<T>& host) { cuda::copy_to_device(data_, host.data(), host.size() * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    cuda::copy_to_host(host.data(), data_, count_ * sizeof(T));
    return host;
  }
  void zero() { cuda::device_zero(data_, count_ * sizeof(T)); }

 private:
  std::size_t count_;
  T* data_;
};

// Uniform values in [lo, hi) rounded to bf16, returned as float (exactly representable).
inline std::vector<float> random_bf16_values(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = cuda::bf16_to_float(cuda::float_to_bf16(dist(rng)));
  return v;
}

inline std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), cuda::float_to_bf16);
  return out;
}

inline std::vector<float> to_float(const std::vector<Bf16>& v) {
  std::vector<float> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), cuda::bf16_to_float);
  return out;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// max |got - want| / (max |want| + floor): one number per tensor, robust to near-zero entries.
template <class A, class B>
double max_relative_error(const std::vector<A>& got, const std::vector<B>& want, double floor = 1e-6) {
  REQUIRE(got.size() == want.size());
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = double(got[i]), w = double(want[i]);
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) return INFINITY;  // -inf lse must match exactly
      continue;
    }
    max_diff = std::max(max_diff, std::fabs(g - w));
    max_ref = std::max(max_ref, std::fabs(w));
  }
  return max_diff / (max_ref + floor);
}

}  // namespace sixfold::gpu_test
