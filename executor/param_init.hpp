#pragma once
// Deterministic initial values that do not depend on the layout: every tensor is drawn whole from
// a generator seeded by (run seed, tensor name), then each rank keeps its slice. So a TP shard, a
// ZeRO shard or a pipeline stage holds exactly the numbers the single-rank run holds.
// Normal(0, 0.02) for weights (GPT-2, Radford et al. 2019), output projections scaled by
// 1/sqrt(2 * layers) (Megatron-LM's scaled init), norm weights 1 and biases 0.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace sixfold {

inline std::uint64_t stable_hash(const std::string& s, std::uint64_t seed) {
  std::uint64_t h = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Full [rows, cols] tensor of Normal(0, stddev) by Box-Muller on a 64-bit Mersenne twister (the
// standard library's normal_distribution is implementation-defined).
inline std::vector<double> normal_tensor(const std::string& name, std::uint64_t seed, long rows, long cols,
                                         double stddev) {
  std::mt19937_64 gen(stable_hash(name, seed));
  std::vector<double> v(rows * cols);
  const double two_pi = 6.283185307179586;
  for (long i = 0; i < rows * cols; i += 2) {
    const double u1 = (double(gen() >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
    const double u2 = double(gen() >> 11) / 9007199254740992.0;
    const double r = std::sqrt(-2.0 * std::log(u1)) * stddev;
    v[i] = r * std::cos(two_pi * u2);
    if (i + 1 < rows * cols) v[i + 1] = r * std::sin(two_pi * u2);
  }
  return v;
}

// The [r0, r1) x [c0, c1) block of a row-major [rows, cols] tensor.
inline std::vector<double> slice(const std::vector<double>& full, long cols, long r0, long r1, long c0, long c1) {
  std::vector<double> out;
  out.reserve((r1 - r0) * (c1 - c0));
  for (long r = r0; r < r1; ++r)
    for (long c = c0; c < c1; ++c) out.push_back(full[r * cols + c]);
  return out;
}

}  // namespace sixfold
