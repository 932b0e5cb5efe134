#include "models/hf_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace sixfold {

namespace {

using nlohmann::json;

// Reads fields of one config with errors that name the file, the field and the model_type.
class ConfigReader {
 public:
  ConfigReader(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  void set_model_type(const std::string& type) { model_type_ = type; }

  // A present, non-null value (transformers writes null for "use the default", e.g. head_dim).
  const json* find(const std::string& field) const {
    auto it = root_.find(field);
    if (it == root_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    std::string text = source_ + ": field '" + field + "': " + message;
    if (!model_type_.empty()) text += " (model_type " + model_type_ + ")";
    throw Error(text);
  }

  long long integer(const std::string& field) const {
    const json* v = find(field);
    if (!v) fail(field, "missing");
    return as_integer(*v, field);
  }
  long long integer(const std::string& field, long long fallback) const {
    const json* v = find(field);
    return v ? as_integer(*v, field) : fallback;
  }
  double number(const std::string& field, double fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    return as_number(*v, field);
  }
  bool boolean(const std::string& field, bool fallback) const {
    const json* v = find(field);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(field, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::string string(const std::string& field) const {
    const json* v = find(field);
    if (!v) fail(field, "missing");
    if (!v->is_string()) fail(field, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }
  std::string string(const std::string& field, const std::string& fallback) const {
    return find(field) ? string(field) : fallback;
  }

  long long as_integer(const json& v, const std::string& field) const {
    if (v.is_number_integer()) return v.get<long long>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) return static_cast<long long>(v.get<double>());
    fail(field, "expected an integer, got " + v.dump());
  }
  double as_number(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "expected a number, got " + v.dump());
    return v.get<double>();
  }

 private:
  const json& root_;
  std::string source_;
  std::string model_type_;
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// Byte offset (nlohmann counts from 1 at the failing character) to "LINE:COL".
std::string line_and_column(const std::string& text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  const std::size_t end = std::min(text.size(), byte > 0 ? byte - 1 : 0);
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// Rotary settings come in two styles: transformers <= 4.x writes rope_theta / rope_scaling /
// partial_rotary_factor at the top level, newer versions group them in rope_parameters. Only the
// rotated share matters to the cost model; theta and scaling are checked for type and not kept.
double rotary_fraction_of(const ConfigReader& cfg, const json& root, double fallback) {
  cfg.number("rope_theta", 0.0);
  if (const json* scaling = cfg.find("rope_scaling"); scaling && !scaling->is_object())
    cfg.fail("rope_scaling", "expected an object, got " + scaling->dump());
  double fraction = cfg.number("partial_rotary_factor", fallback);
  if (const json* params = cfg.find("rope_parameters")) {
    if (!params->is_object()) cfg.fail("rope_parameters", "expected an object, got " + params->dump());
    // Either one set of parameters, or one per attention type ({"full_attention": {...}, ...}).
    const json* main = params;
    if (!params->contains("rope_type") && !params->contains("rope_theta")) {
      for (const auto& [key, value] : params->items())
        if (value.is_object()) {
          main = &value;
          break;
        }
    }
    if (auto it = main->find("rope_theta"); it != main->end() && !it->is_null())
      cfg.as_number(*it, "rope_parameters.rope_theta");
    if (auto it = main->find("partial_rotary_factor"); it != main->end() && !it->is_null())
      fraction = cfg.as_number(*it, "rope_parameters.partial_rotary_factor");
  }
  return fraction;
}

// Fields shared by every supported decoder.
void read_common(const ConfigReader& cfg, ModelSpec& m) {
  m.layers = static_cast<int>(cfg.integer("num_hidden_layers"));
  m.hidden = cfg.integer("hidden_size");
  m.heads = static_cast<int>(cfg.integer("num_attention_heads"));
  m.kv_heads = static_cast<int>(cfg.integer("num_key_value_heads", m.heads));
  m.vocab = cfg.integer("vocab_size");
  m.max_seq = static_cast<int>(cfg.integer("max_position_embeddings", 0));
  // Every supported configuration class defaults tie_word_embeddings to false.
  m.tied_embeddings = cfg.boolean("tie_word_embeddings", false);
  m.head_dim = static_cast<int>(cfg.integer("head_dim", m.heads > 0 ? m.hidden / m.heads : 0));
  // Released configs set these to 0.0 (inference defaults); a fine-tuning config may not.
  m.dropout = cfg.number("attention_dropout", 0.0) > 0 || cfg.number("hidden_dropout", 0.0) > 0;
}

// Llama-style decoders: RMSNorm, gated SiLU MLP (SwiGLU), RoPE.
void read_llama_like(const ConfigReader& cfg, const json& root, ModelSpec& m) {
  read_common(cfg, m);
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  m.rotary_fraction = rotary_fraction_of(cfg, root, 1.0);
  // attention_bias puts a bias on q, k, v and o (LlamaAttention); ModelSpec keeps the q, k, v
  // part, the o bias (hidden parameters per layer) is not represented.
  m.qkv_bias = cfg.boolean("attention_bias", false);
}

void read_gpt_neox(const ConfigReader& cfg, const json& root, ModelSpec& m) {
  read_common(cfg, m);
  m.ffn = cfg.integer("intermediate_size");
  m.norm = NormKind::LayerNorm;
  m.activation = Activation::GELU;
  // GPTNeoXConfig defaults: use_parallel_residual true, rotary_pct 0.25; biases on every linear.
  m.parallel_residual = cfg.boolean("use_parallel_residual", true);
  double fraction = rotary_fraction_of(cfg, root, 0.25);
  if (cfg.find("rotary_pct")) fraction = cfg.number("rotary_pct", fraction);
  m.rotary_fraction = fraction;
  m.linear_bias = true;
  m.qkv_bias = cfg.boolean("attention_bias", true);
  if (!m.qkv_bias) cfg.fail("attention_bias", "false is not supported (ModelSpec keeps GPT-NeoX's MLP and attention biases together)");
}

void read_qwen3_moe(const ConfigReader& cfg, ModelSpec& m) {
  m.moe.num_experts = static_cast<int>(cfg.integer("num_experts"));
  m.moe.top_k = static_cast<int>(cfg.integer("num_experts_per_tok"));
  m.moe.expert_ffn = cfg.integer("moe_intermediate_size");
  m.ffn = cfg.integer("intermediate_size", 0);
  // Qwen3MoeDecoderLayer: layer i is sparse when i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0, i.e. layers step-1, 2*step-1, ...
  const long long step = cfg.integer("decoder_sparse_step", 1);
  if (step < 1) cfg.fail("decoder_sparse_step", "must be at least 1");
  m.moe.layer_frequency = static_cast<int>(step);
  m.moe.first_k_dense = static_cast<int>(step - 1);
  if (const json* dense = cfg.find("mlp_only_layers")) {
    if (!dense->is_array()) cfg.fail("mlp_only_layers", "expected a list of layer indices, got " + dense->dump());
    // Only a leading run 0..k-1 with step 1 fits ModelSpec's first_k_dense.
    for (std::size_t i = 0; i < dense->size(); ++i)
      if (cfg.as_integer((*dense)[i], "mlp_only_layers") != static_cast<long long>(i) || step != 1)
        cfg.fail("mlp_only_layers", "only a leading run 0, 1, ..., k-1 with decoder_sparse_step 1 is supported, got " +
                                        dense->dump());
    if (!dense->empty()) m.moe.first_k_dense = static_cast<int>(dense->size());
  }
}

void read_deepseek(const ConfigReader& cfg, const json& root, ModelSpec& m, bool v3) {
  read_common(cfg, m);
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  m.ffn = cfg.integer("intermediate_size");
  auto& a = m.mla;
  a.enabled = true;
  a.q_lora_rank = static_cast<int>(cfg.integer("q_lora_rank", 0));  // null in DeepSeek-V2-Lite: plain q_proj
  a.kv_lora_rank = static_cast<int>(cfg.integer("kv_lora_rank"));
  a.qk_nope_head_dim = static_cast<int>(cfg.integer("qk_nope_head_dim"));
  a.qk_rope_head_dim = static_cast<int>(cfg.integer("qk_rope_head_dim"));
  a.v_head_dim = static_cast<int>(cfg.integer("v_head_dim"));
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  rotary_fraction_of(cfg, root, 1.0);
  // RoPE touches only the decoupled rope part of each query/key head.
  m.rotary_fraction = m.head_dim > 0 ? double(a.qk_rope_head_dim) / m.head_dim : 0.0;
  if (cfg.find("n_routed_experts")) {
    m.moe.num_experts = static_cast<int>(cfg.integer("n_routed_experts"));
    m.moe.top_k = static_cast<int>(cfg.integer("num_experts_per_tok"));
    m.moe.expert_ffn = cfg.integer("moe_intermediate_size");
    // DeepseekV3MLP(intermediate_size = moe_intermediate_size * n_shared_experts) holds the same
    // parameters as n_shared_experts experts of moe_intermediate_size each (no biases).
    m.moe.shared_experts = static_cast<int>(cfg.integer("n_shared_experts", 0));
    // DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
    // ModelSpec counts from the first MoE layer, so start at the first multiple of the frequency.
    const long long first = cfg.integer("first_k_dense_replace", 0);
    const long long freq = cfg.integer("moe_layer_freq", 1);
    if (freq < 1) cfg.fail("moe_layer_freq", "must be at least 1");
    m.moe.layer_frequency = static_cast<int>(freq);
    m.moe.first_k_dense = static_cast<int>((first + freq - 1) / freq * freq);
    // V3 balances experts with a learned per-expert score bias (topk_method "noaux_tc").
    m.moe.router_bias = v3 && cfg.string("topk_method", "noaux_tc") == "noaux_tc";
  }
}

}  // namespace

const std::vector<std::string>& supported_hf_model_types() {
  static const std::vector<std::string> types = {"deepseek_v2", "deepseek_v3", "gpt_neox", "llama", "mistral",
                                                 "mixtral",     "qwen2",       "qwen3",    "qwen3_moe"};
  return types;
}

ModelSpec parse_hf_config(const std::string& json_text, const std::string& source, const std::string& name) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error(source + ":" + line_and_column(json_text, e.byte) + ": malformed JSON (byte " + std::to_string(e.byte) +
                "): " + e.what());
  }
  if (!root.is_object()) throw Error(source + ": a config.json must be a JSON object");
  ConfigReader cfg(root, source);
  const std::string type = cfg.string("model_type");
  const auto& types = supported_hf_model_types();
  if (std::find(types.begin(), types.end(), type) == types.end())
    throw UsageError(source + ": unsupported model_type '" + type + "' (supported: " + join(types) + ")");
  cfg.set_model_type(type);

  ModelSpec m;
  m.name = name;
  if (type == "gpt_neox") {
    read_gpt_neox(cfg, root, m);
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    read_deepseek(cfg, root, m, type == "deepseek_v3");
  } else {
    read_llama_like(cfg, root, m);
    if (type == "qwen2") m.qkv_bias = true;  // Qwen2Attention: q, k, v always carry a bias
    if (type == "qwen3" || type == "qwen3_moe") m.qk_norm = true;
    if (type == "mixtral") {
      m.ffn = cfg.integer("intermediate_size");
      m.moe.num_experts = static_cast<int>(cfg.integer("num_local_experts"));
      m.moe.top_k = static_cast<int>(cfg.integer("num_experts_per_tok"));
      m.moe.expert_ffn = m.ffn;
    } else if (type == "qwen3_moe") {
      read_qwen3_moe(cfg, m);
    } else {
      m.ffn = cfg.integer("intermediate_size");
    }
  }
  validate_model(m, source);
  return m;
}

ModelSpec load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::filesystem::path p(path);
  std::string name = p.stem().string();
  if (p.filename() == "config.json") {
    const auto folder = std::filesystem::absolute(p).parent_path().filename().string();
    if (!folder.empty()) name = folder;
  }
  return parse_hf_config(ss.str(), path, name);
}

}  // namespace sixfold
