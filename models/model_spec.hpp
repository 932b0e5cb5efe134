#pragma once
// Architecture of a decoder-only transformer: dense (GPT, Llama, Pythia), GQA, MoE (Mixtral,
// Qwen3-MoE, DeepSeek) and MLA attention (DeepSeek-V2/V3). Knows nothing of hardware or cost.
#include <string>

#include "common/units.hpp"

namespace sixfold {

enum class NormKind { LayerNorm, RMSNorm };
// The MLP's activation. GELU and squared ReLU (Nemotron-4; Megatron's --squared-relu) are
// non-gated: two matrices, one elementwise op; SwiGLU is gated (three matrices).
enum class Activation { GELU, SwiGLU, SquaredReLU };

// Mixture of experts. num_experts == 0 means a dense model.
struct MoeSpec {
  int num_experts = 0;          // routed experts per MoE layer
  int top_k = 0;                // routed experts per token
  Count expert_ffn = 0;         // FFN size of one routed expert
  int shared_experts = 0;       // always-active experts (DeepSeek), each of size shared_expert_ffn
  Count shared_expert_ffn = 0;  // 0: same as expert_ffn
  int first_k_dense = 0;        // the first k layers use a dense FFN of size ModelSpec::ffn
  int layer_frequency = 1;      // every n-th layer (after first_k_dense) is MoE
  double capacity_factor = 0;   // 0: dropless (no capacity limit)
  bool router_bias = false;     // DeepSeek-V3 e_score_correction_bias (E parameters)
  bool enabled() const { return num_experts > 0; }
};

// Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank == 0: a plain q projection.
struct MlaSpec {
  bool enabled = false;
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  int layers = 0;
  Count hidden = 0;
  Count ffn = 0;        // dense FFN size (for SwiGLU: the size of each of gate and up)
  int heads = 0;
  int kv_heads = 0;     // == heads without GQA
  int head_dim = 0;     // 0 in a file means hidden / heads
  Count vocab = 0;
  int max_seq = 0;      // default sequence length (0: not stated)
  bool tied_embeddings = false;
  NormKind norm = NormKind::RMSNorm;
  Activation activation = Activation::SwiGLU;
  bool parallel_residual = false;  // GPT-NeoX: attention and MLP read the same input
  double rotary_fraction = 1.0;    // share of head_dim that RoPE rotates (Pythia: 0.25); 0: learned/absolute
  // Not priced, but needed to run the model and load its checkpoint: exported to the frameworks.
  double rope_theta = 10000;       // RoPE base (Llama 3: 500000, Qwen: 1e6)
  double rope_scaling_factor = 0;  // Llama 3.1's RoPE frequency scaling factor (8); 0: none
  double norm_eps = 1e-5;          // epsilon of every RMSNorm/LayerNorm (Qwen, DeepSeek: 1e-6)
  bool qkv_bias = false;           // bias on q, k, v (Qwen2, GPT-NeoX)
  bool linear_bias = false;        // bias on every linear layer (GPT-NeoX, GPT-2/3)
  bool qk_norm = false;            // per-head RMSNorm on q and k (Qwen3)
  bool learned_positions = false;  // absolute learned position embedding (GPT-2/3), max_seq rows
  bool dropout = false;            // dropout after attention, MLP and embedding (GPT-3/Megatron GPT); saves 1-byte masks
  MoeSpec moe;
  MlaSpec mla;

  // Derived sizes.
  int q_head_dim() const;          // per-head query/key width (MLA: nope + rope)
  int v_head_dim() const;          // per-head value width
  bool is_moe_layer(int layer) const;
  int moe_layer_count() const;
  // MoE layers among layers [begin, end), without visiting each (a search asks for every stage).
  int moe_layers_in(int begin, int end) const;
};

// Parameter counts by part; totals count every routed expert, active counts top_k of them.
struct ParameterCounts {
  Count embedding = 0;         // token (+ learned position) embedding
  Count lm_head = 0;           // 0 when tied
  Count final_norm = 0;
  Count attention_per_layer = 0;  // incl. its norm
  Count dense_mlp_per_layer = 0;  // incl. its norm
  Count moe_per_layer_total = 0;  // router + all experts + shared experts + norm
  Count moe_per_layer_active = 0; // router + top_k experts + shared experts + norm
  Count expert = 0;               // one routed expert
  Count total = 0;
  Count active = 0;
};

ParameterCounts count_parameters(const ModelSpec& model);

// The values a model field may take ("layers", "hidden", "moe.experts", "mla.kv_lora_rank", ...),
// shared by the zoo YAML and Hugging Face readers and validate_model. Unknown names throw.
struct FieldRange {
  long long min, max;
};
FieldRange model_field_range(const std::string& field);

// Throws UsageError naming the field when the description is inconsistent or out of range
// (model_field_range; at most limits::kParameters parameters in all).
void validate_model(const ModelSpec& model, const std::string& source);

}  // namespace sixfold
