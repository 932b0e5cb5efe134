// Parameter counts of the zoo models against the totals their authors published.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/model_zoo.hpp"

using namespace sixfold;

namespace {

constexpr double kBillion = 1e9;

// Published totals with three or more significant digits are matched within 0.5%.
void check_within_half_percent(Count counted, double published, const std::string& what) {
  INFO(what << ": counted " << double(counted) / kBillion << "B, published " << published / kBillion << "B");
  CHECK(std::abs(double(counted) - published) <= 0.005 * published);
}

// Figures published to two significant digits ("22B activated") carry +-0.5B of rounding; a
// 0.5% band would be tighter than the figure itself, so check that the count rounds to it.
void check_rounds_to_billions(Count counted, int published_billions, const std::string& what) {
  INFO(what << ": counted " << double(counted) / kBillion << "B, published " << published_billions << "B");
  CHECK(std::lround(double(counted) / kBillion) == published_billions);
}

}  // namespace

TEST_CASE("Pythia-6.9B: 6,857,302,016 parameters (Biderman et al. 2023, Table 1 / HF checkpoint)") {
  const auto c = count_parameters(load_model("pythia-6.9b"));
  // Exactly the released checkpoint's count: 32 * (12 h^2 + 13 h) + 2 * 50432 h + 2 h, h = 4096.
  CHECK(c.total == 6857302016LL);
  check_within_half_percent(c.total, 6.857e9, "pythia-6.9b");
}

TEST_CASE("Llama 3 family totals (Llama 3 model cards)") {
  check_within_half_percent(count_parameters(load_model("llama3-8b")).total, 8.03e9, "llama3-8b");
  check_within_half_percent(count_parameters(load_model("llama3-70b")).total, 70.55e9, "llama3-70b");
  check_within_half_percent(count_parameters(load_model("llama3.1-405b")).total, 405.85e9, "llama3.1-405b");
  // Exact for Llama-3-8B: 32 layers * 218,112,000 + 2 * 128256 * 4096 + 4096.
  CHECK(count_parameters(load_model("llama3-8b")).total == 8030261248LL);
}

TEST_CASE("Nemotron-4: 340B and 15B, squared-ReLU MLPs of two matrices (arXiv 2406.11704, 2402.16819)") {
  // 340B: 96 layers of 4 h^2 (attention, 8 KV heads of 128: q and o h^2 each, k and v h^2/12 each)
  // + 2 h ffn (up, down) + norms, and two 256000 x h tables. A gated MLP would make it ~471B.
  const auto big = count_parameters(load_model("nemotron4-340b"));
  CHECK(big.total > 339e9);
  CHECK(big.total < 342e9);
  // 15B: "3.2 billion embedding parameters and 12.5 billion non-embedding parameters" (section 2).
  const auto small = count_parameters(load_model("nemotron4-15b"));
  const Count tables = 2LL * 256000 * 6144;  // input embedding and output head, untied
  check_within_half_percent(small.total - tables, 12.5e9, "nemotron4-15b without its embedding tables");
}

TEST_CASE("Mixtral-8x7B: 46.7B total, 12.9B active (Jiang et al. 2024)") {
  const auto c = count_parameters(load_model("mixtral-8x7b"));
  check_within_half_percent(c.total, 46.7e9, "mixtral total");
  check_within_half_percent(c.active, 12.9e9, "mixtral active");
}

TEST_CASE("DeepSeek-V3 without MTP: 671B total, 37B activated (arXiv 2412.19437)") {
  const auto c = count_parameters(load_model("deepseek-v3"));
  check_within_half_percent(c.total, 671e9, "deepseek-v3 total");
  // Our active count, with the token embedding, is 37.55B; DeepSeek's "37B" matches the count
  // without the embedding lookup table (36.63B), which reads one row per token and does no
  // matrix work. The lm_head (a real GEMM) stays in.
  check_rounds_to_billions(c.active - c.embedding, 37, "deepseek-v3 active without token embedding");
  CHECK(c.active > 36e9);
  CHECK(c.active < 38e9);
}

TEST_CASE("Qwen3 MoE: 235B total / 22B active, 30.5B total / 3.3B active (Qwen3 model cards)") {
  const auto big = count_parameters(load_model("qwen3-235b-a22b"));
  check_within_half_percent(big.total, 235e9, "qwen3-235b total");
  check_rounds_to_billions(big.active, 22, "qwen3-235b active");
  const auto small = count_parameters(load_model("qwen3-30b-a3b"));
  check_within_half_percent(small.total, 30.5e9, "qwen3-30b total");
  // Counted 3.353B active; the card's "3.3B" (like its "29.9B non-embedding", which we meet:
  // 29.91B) is the count cut to one decimal, not rounded.
  CHECK(static_cast<long>(double(small.active) / 1e8) == 33);
  CHECK(static_cast<long>(double(small.total - small.embedding - small.lm_head) / 1e8) == 299);
}

TEST_CASE("Narayanan et al. 2021 Table 1 GPT sizes match the closed formula of its eq. (2)") {
  // P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)), V = 51200, s = 2048: the paper's own
  // count (tied embedding, learned positions, biases, two LayerNorms per layer).
  struct Row {
    const char* name;
    double published_billions;
  };
  const Row rows[] = {{"gpt-1.7b", 1.7},  {"gpt-3.6b", 3.6},  {"gpt-7.5b", 7.5},  {"gpt-18b", 18.4},
                      {"gpt-39b", 39.1},  {"gpt-76b", 76.1},  {"gpt-145b", 145.6}, {"gpt-310b", 310.1},
                      {"gpt-530b", 529.6}, {"gpt-1t", 1008.0}};
  for (const auto& row : rows) {
    const ModelSpec m = load_model(row.name);
    const double l = m.layers, h = double(m.hidden);
    const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (51200.0 + 2048.0) / (12 * l * h));
    const Count counted = count_parameters(m).total;
    INFO(row.name << ": counted " << double(counted) << ", formula " << formula);
    // The formula omits only the final LayerNorm (2h).
    CHECK(double(counted) - formula == doctest::Approx(2 * h));
    check_within_half_percent(counted, formula, row.name);
    // Table 1 states sizes to 0.1B (1.7B ... 1008.0B); the count rounds to each of them.
    CHECK(std::lround(double(counted) / kBillion * 10) == std::lround(row.published_billions * 10));
  }
  check_within_half_percent(count_parameters(load_model("gpt3-175b")).total, 174.6e9, "gpt3-175b");
}
