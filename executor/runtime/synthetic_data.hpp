#pragma once
// Synthetic training tokens with a learnable rule: each sequence starts at a random token and
// continues by t_{i+1} = (5 t_i + 7) mod vocab, so a model that learns the bigram drives the loss
// towards 0 while an untrained one sits at about log(vocab). Sequence g of step s is a pure
// function of (seed, s, g), so every layout sees the same data.
#include <cstdint>
#include <random>
#include <vector>

namespace sixfold {

// seq + 1 tokens (inputs are [0, seq), targets [1, seq]).
inline std::vector<int> synthetic_sequence(std::uint64_t seed, long step, long sequence, int seq, int vocab) {
  std::mt19937_64 gen(seed * 1000003ull + std::uint64_t(step) * 7919ull + std::uint64_t(sequence) * 104729ull + 17);
  std::vector<int> tokens(seq + 1);
  tokens[0] = int(gen() % std::uint64_t(vocab));
  for (int i = 1; i <= seq; ++i) tokens[i] = int((5ll * tokens[i - 1] + 7) % vocab);
  return tokens;
}

}  // namespace sixfold
