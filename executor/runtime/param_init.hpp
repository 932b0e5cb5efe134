#pragma once
// Deterministic initial values that do not depend on the layout: each element is drawn from
// (run seed, tensor name, element index), so a TP shard, a ZeRO shard or a pipeline stage holds
// exactly the numbers the single-rank run holds.
// Normal(0, 0.02) for weights (GPT-2, Radford et al. 2019), output projections scaled by
// 1/sqrt(2 * layers) (Megatron-LM's scaled init), norm weights 1 and biases 0.
#include <cmath>
#include <cstdint>
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

// A counter-based generator: element i of a tensor is a function of (seed, name, i) alone, so a
// rank draws only its own block of a sharded tensor (a 70B model's shard, not the whole model) and
// still holds exactly the numbers the single-rank run holds.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Normal(0, stddev) by Box-Muller (the standard library's normal_distribution is
// implementation-defined) for the [r0, r1) x [c0, c1) block of a row-major [rows, cols] tensor.
inline std::vector<double> normal_block(const std::string& name, std::uint64_t seed, long cols, long r0, long r1, long c0,
                                        long c1, double stddev) {
  const std::uint64_t key = stable_hash(name, seed);
  const double two_pi = 6.283185307179586;
  std::vector<double> out;
  out.reserve((r1 - r0) * (c1 - c0));
  for (long r = r0; r < r1; ++r)
    for (long c = c0; c < c1; ++c) {
      const std::uint64_t i = std::uint64_t(r) * std::uint64_t(cols) + std::uint64_t(c);
      const double u1 = (double(splitmix64(key ^ (2 * i)) >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
      const double u2 = double(splitmix64(key ^ (2 * i + 1)) >> 11) / 9007199254740992.0;
      out.push_back(std::sqrt(-2.0 * std::log(u1)) * stddev * std::cos(two_pi * u2));
    }
  return out;
}

// The whole [rows, cols] tensor.
inline std::vector<double> normal_tensor(const std::string& name, std::uint64_t seed, long rows, long cols,
                                         double stddev) {
  return normal_block(name, seed, cols, 0, rows, 0, cols, stddev);
}

}  // namespace sixfold
