#include "models/model_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/error.hpp"
#include "common/parse.hpp"

namespace sixfold {

int ModelSpec::q_head_dim() const { return mla.enabled ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim; }
int ModelSpec::v_head_dim() const { return mla.enabled ? mla.v_head_dim : head_dim; }

bool ModelSpec::is_moe_layer(int layer) const {
  if (!moe.enabled() || layer < moe.first_k_dense) return false;
  return (layer - moe.first_k_dense) % std::max(1, moe.layer_frequency) == 0;
}

int ModelSpec::moe_layers_in(int begin, int end) const {
  if (!moe.enabled()) return 0;
  const int f = std::max(1, moe.layer_frequency);
  const int from = std::max(begin, moe.first_k_dense) - moe.first_k_dense;  // offsets past the dense layers
  const int to = end - moe.first_k_dense;
  if (from >= to) return 0;
  const int first = (from + f - 1) / f * f;  // the first offset is_moe_layer accepts
  return first < to ? (to - 1 - first) / f + 1 : 0;
}

int ModelSpec::moe_layer_count() const {
  int n = 0;
  for (int l = 0; l < layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

namespace {
Count norm_params(const ModelSpec& m, Count width) { return m.norm == NormKind::LayerNorm ? 2 * width : width; }

Count attention_params(const ModelSpec& m) {
  const Count h = m.hidden;
  Count p = norm_params(m, h);
  if (m.mla.enabled) {
    const auto& a = m.mla;
    const Count qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0)
      p += h * a.q_lora_rank + a.q_lora_rank /*q norm*/ + Count(a.q_lora_rank) * m.heads * qk;
    else
      p += h * m.heads * qk;
    p += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank /*kv norm*/;
    p += Count(a.kv_lora_rank) * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
    p += Count(m.heads) * a.v_head_dim * h;
    return p;
  }
  const Count q = Count(m.heads) * m.head_dim, kv = Count(m.kv_heads) * m.head_dim;
  p += h * (q + 2 * kv) + q * h;
  if (m.qkv_bias || m.linear_bias) p += q + 2 * kv;
  if (m.linear_bias) p += h;
  if (m.qk_norm) p += 2 * Count(m.head_dim);
  return p;
}

Count mlp_params(const ModelSpec& m, Count ffn) {
  const Count h = m.hidden;
  Count p = (m.activation == Activation::SwiGLU ? 3 : 2) * h * ffn;
  if (m.linear_bias) p += (m.activation == Activation::SwiGLU ? 2 * ffn : ffn) + h;
  return p;
}
}  // namespace

ParameterCounts count_parameters(const ModelSpec& m) {
  ParameterCounts c;
  c.embedding = m.vocab * m.hidden + (m.learned_positions ? Count(m.max_seq) * m.hidden : 0);
  c.lm_head = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  c.final_norm = norm_params(m, m.hidden);
  c.attention_per_layer = attention_params(m);
  c.dense_mlp_per_layer = norm_params(m, m.hidden) + mlp_params(m, m.ffn);
  if (m.moe.enabled()) {
    c.expert = mlp_params(m, m.moe.expert_ffn);
    const Count shared_ffn = m.moe.shared_expert_ffn > 0 ? m.moe.shared_expert_ffn : m.moe.expert_ffn;
    const Count shared = Count(m.moe.shared_experts) * mlp_params(m, shared_ffn);
    const Count router = m.hidden * m.moe.num_experts + (m.moe.router_bias ? m.moe.num_experts : 0);
    const Count common = norm_params(m, m.hidden) + router + shared;
    c.moe_per_layer_total = common + Count(m.moe.num_experts) * c.expert;
    c.moe_per_layer_active = common + Count(m.moe.top_k) * c.expert;
  }
  const int moe_layers = m.moe_layer_count();
  const int dense_layers = m.layers - moe_layers;
  const Count shared = c.embedding + c.lm_head + c.final_norm + Count(m.layers) * c.attention_per_layer +
                       Count(dense_layers) * c.dense_mlp_per_layer;
  c.total = shared + Count(moe_layers) * c.moe_per_layer_total;
  c.active = shared + Count(moe_layers) * c.moe_per_layer_active;
  return c;
}

FieldRange model_field_range(const std::string& field) {
  using namespace limits;
  static const std::map<std::string, FieldRange> ranges = {
      {"layers", {1, kLayers}},
      {"hidden", {1, kHidden}},
      {"ffn", {0, kFfn}},
      {"heads", {1, kHeads}},
      {"kv_heads", {1, kHeads}},
      {"head_dim", {0, kHeadDim}},
      {"vocab", {1, kVocab}},
      {"max_seq", {0, kSeq}},
      {"moe.experts", {1, kExperts}},
      {"moe.top_k", {1, kTopK}},
      {"moe.expert_ffn", {1, kFfn}},
      {"moe.shared_experts", {0, kExperts}},
      {"moe.shared_expert_ffn", {0, kFfn}},
      {"moe.first_k_dense", {0, kLayers}},
      {"moe.layer_frequency", {1, kLayers}},
      {"mla.q_lora_rank", {0, kLoraRank}},
      {"mla.kv_lora_rank", {1, kLoraRank}},
      {"mla.qk_nope_head_dim", {1, kHeadDim}},
      {"mla.qk_rope_head_dim", {0, kHeadDim}},
      {"mla.v_head_dim", {1, kHeadDim}},
  };
  auto it = ranges.find(field);
  if (it == ranges.end()) throw Error("model_field_range: no field '" + field + "'");
  return it->second;
}

namespace {
// An upper bound of the parameter count in floating point, so that a huge description is refused
// before count_parameters' 64-bit sums could overflow.
double parameter_bound(const ModelSpec& m) {
  const double h = double(m.hidden), layers = double(m.layers);
  const double qk = m.mla.enabled ? double(m.mla.qk_nope_head_dim) + m.mla.qk_rope_head_dim : double(m.head_dim);
  const double v = m.mla.enabled ? double(m.mla.v_head_dim) : double(m.head_dim);
  double attention = 4 * h + (h + 1) * (double(m.heads) * qk + 2.0 * m.kv_heads * qk) + double(m.heads) * v * h;
  if (m.mla.enabled)
    attention += (h + 1 + double(m.heads) * qk) * m.mla.q_lora_rank +
                 (h + 1 + double(m.heads) * (m.mla.qk_nope_head_dim + m.mla.v_head_dim)) * m.mla.kv_lora_rank +
                 h * m.mla.qk_rope_head_dim + double(m.heads) * v * h;
  const auto mlp = [&](double ffn) { return 3 * h * ffn + 2 * ffn + 3 * h; };
  double ffn_block = mlp(double(m.ffn));
  if (m.moe.enabled()) {
    const double shared_ffn = m.moe.shared_expert_ffn > 0 ? double(m.moe.shared_expert_ffn) : double(m.moe.expert_ffn);
    ffn_block = std::max(ffn_block, double(m.moe.num_experts) * mlp(double(m.moe.expert_ffn)) +
                                        double(m.moe.shared_experts) * mlp(shared_ffn) + h * (m.moe.num_experts + 1) + 3 * h);
  }
  return 2 * double(m.vocab) * h + double(m.max_seq) * h + 4 * h + layers * (attention + ffn_block);
}
}  // namespace

void validate_model(const ModelSpec& m, const std::string& source) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw UsageError(source + ": field '" + field + "': " + why);
  };
  auto in_range = [&](const std::string& field, long long value) {
    const FieldRange r = model_field_range(field);
    if (value < r.min || value > r.max)
      fail(field, std::to_string(value) + " is out of range (allowed: " + std::to_string(r.min) + " to " +
                      std::to_string(r.max) + ")");
  };
  in_range("layers", m.layers);
  in_range("hidden", m.hidden);
  in_range("ffn", m.ffn);
  in_range("heads", m.heads);
  in_range("kv_heads", m.kv_heads);
  in_range("vocab", m.vocab);
  in_range("max_seq", m.max_seq);
  if (!m.mla.enabled) in_range("head_dim", m.head_dim);
  if (!std::isfinite(m.rotary_fraction)) fail("rotary_fraction", "must be a finite number within [0, 1]");
  if (m.moe.num_experts != 0) {
    in_range("moe.experts", m.moe.num_experts);
    in_range("moe.top_k", m.moe.top_k);
    in_range("moe.expert_ffn", m.moe.expert_ffn);
    in_range("moe.shared_experts", m.moe.shared_experts);
    in_range("moe.shared_expert_ffn", m.moe.shared_expert_ffn);
    in_range("moe.first_k_dense", m.moe.first_k_dense);
    in_range("moe.layer_frequency", m.moe.layer_frequency);
    if (!std::isfinite(m.moe.capacity_factor) || m.moe.capacity_factor < 0 || m.moe.capacity_factor > 1000)
      fail("moe.capacity_factor", "must be within [0, 1000] (0: dropless)");
  }
  if (m.mla.enabled) {
    in_range("mla.q_lora_rank", m.mla.q_lora_rank);
    in_range("mla.kv_lora_rank", m.mla.kv_lora_rank);
    in_range("mla.qk_nope_head_dim", m.mla.qk_nope_head_dim);
    in_range("mla.qk_rope_head_dim", m.mla.qk_rope_head_dim);
    in_range("mla.v_head_dim", m.mla.v_head_dim);
  }
  // Attention widths bound the activations a rank holds (tokens x width x bytes in 64 bits).
  if (double(m.heads) * std::max(m.q_head_dim(), m.v_head_dim()) > double(4 * limits::kHidden))
    fail("head_dim", "heads x head_dim = " + std::to_string(Count(m.heads) * std::max(m.q_head_dim(), m.v_head_dim())) +
                         " is above " + std::to_string(4 * limits::kHidden));
  if (const double p = parameter_bound(m); p > limits::kParameters) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", p);
    fail("layers", std::string("the model would have about ") + buf + " parameters (at most 1e15)");
  }
  if (m.layers <= 0) fail("layers", "must be positive");
  if (m.hidden <= 0) fail("hidden", "must be positive");
  if (m.heads <= 0) fail("heads", "must be positive");
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0) fail("kv_heads", "must divide heads (" + std::to_string(m.heads) + ")");
  if (m.vocab <= 0) fail("vocab", "must be positive");
  if (m.head_dim <= 0 && !m.mla.enabled) fail("head_dim", "must be positive");
  if (m.ffn <= 0 && (!m.moe.enabled() || m.moe.first_k_dense > 0)) fail("ffn", "must be positive");
  if (!(m.rotary_fraction >= 0 && m.rotary_fraction <= 1)) fail("rotary_fraction", "must be within [0, 1]");
  if (!(m.rope_theta >= 1 && m.rope_theta <= 1e9)) fail("rope_theta", "must be within [1, 1e9]");
  if (!(m.rope_scaling_factor == 0 || (m.rope_scaling_factor >= 1 && m.rope_scaling_factor <= 1024)))
    fail("rope_scaling_factor", "must be 0 (none) or within [1, 1024]");
  if (!(m.norm_eps > 0 && m.norm_eps <= 1e-2)) fail("norm_eps", "must be within (0, 0.01]");
  if (m.learned_positions && m.max_seq <= 0) fail("max_seq", "must be positive with learned_positions (rows of the position table)");
  if (m.moe.enabled()) {
    if (m.moe.top_k <= 0 || m.moe.top_k > m.moe.num_experts)
      fail("moe.top_k", "must be within [1, experts=" + std::to_string(m.moe.num_experts) + "]");
    if (m.moe.expert_ffn <= 0) fail("moe.expert_ffn", "must be positive");
    if (m.moe.first_k_dense < 0 || m.moe.first_k_dense >= m.layers) fail("moe.first_k_dense", "must be within [0, layers)");
    if (m.moe.layer_frequency < 1) fail("moe.layer_frequency", "must be at least 1");
    if (m.moe.shared_experts < 0 || m.moe.shared_expert_ffn < 0) fail("moe.shared_experts", "must not be negative");
  }
  if (m.mla.enabled) {
    if (m.mla.kv_lora_rank <= 0) fail("mla.kv_lora_rank", "must be positive");
    if (m.mla.qk_nope_head_dim <= 0 || m.mla.v_head_dim <= 0) fail("mla", "head dims must be positive");
  }
}

}  // namespace sixfold
