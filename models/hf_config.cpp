#include "models/hf_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/parse.hpp"

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

  // An integer within the range of the ModelSpec field it fills (model_field_range).
  long long count(const std::string& field, const std::string& model_field) const {
    return in_range(field, integer(field), model_field_range(model_field));
  }
  long long count(const std::string& field, const std::string& model_field, long long fallback) const {
    return find(field) ? count(field, model_field) : fallback;
  }
  long long in_range(const std::string& field, long long v, FieldRange r) const {
    if (v < r.min || v > r.max)
      fail(field, std::to_string(v) + " is out of range (allowed: " + std::to_string(r.min) + " to " + std::to_string(r.max) + ")");
    return v;
  }

  long long as_integer(const json& v, const std::string& field) const {
    if (v.is_number_unsigned() && v.get<unsigned long long>() > 0x7fffffffffffffffULL) fail(field, v.dump() + " is out of range");
    if (v.is_number_integer()) return v.get<long long>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<long long>(d);
    }
    fail(field, "expected an integer, got " + v.dump());
  }
  double as_number(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "expected a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(field, "expected a finite number, got " + v.dump());
    return d;
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
double rotary_fraction_of(const ConfigReader& cfg, const json& root, double fallback, ModelSpec* m = nullptr) {
  const double theta = cfg.number("rope_theta", 0.0);
  if (m && theta > 0) m->rope_theta = theta;
  // Llama 3.1's frequency scaling ({"rope_type": "llama3", "factor": 8, ...}).
  if (const json* scaling = cfg.find("rope_scaling"); m && scaling && scaling->is_object()) {
    const auto type = scaling->find("rope_type") != scaling->end() ? scaling->find("rope_type") : scaling->find("type");
    const auto factor = scaling->find("factor");
    if (type != scaling->end() && type->is_string() && type->get<std::string>() == "llama3" && factor != scaling->end() &&
        factor->is_number())
      m->rope_scaling_factor = factor->get<double>();
  }
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
    if (auto it = main->find("rope_theta"); it != main->end() && !it->is_null()) {
      const double t = cfg.as_number(*it, "rope_parameters.rope_theta");
      if (m && t > 0) m->rope_theta = t;
    }
    if (auto it = main->find("partial_rotary_factor"); it != main->end() && !it->is_null())
      fraction = cfg.as_number(*it, "rope_parameters.partial_rotary_factor");
  }
  return fraction;
}

// Fields shared by every supported decoder.
// hidden_act of the MLP: the activation ModelSpec prices, refused when it is another.
void check_activation(const ConfigReader& cfg, const std::vector<std::string>& allowed) {
  const std::string act = cfg.string("hidden_act", allowed.front());
  if (std::find(allowed.begin(), allowed.end(), act) == allowed.end())
    cfg.fail("hidden_act", "'" + act + "' is not supported (allowed: " + join(allowed) + ")");
}

void read_common(const ConfigReader& cfg, ModelSpec& m) {
  m.layers = static_cast<int>(cfg.count("num_hidden_layers", "layers"));
  m.hidden = cfg.count("hidden_size", "hidden");
  m.heads = static_cast<int>(cfg.count("num_attention_heads", "heads"));
  m.kv_heads = static_cast<int>(cfg.count("num_key_value_heads", "kv_heads", m.heads));
  m.vocab = cfg.count("vocab_size", "vocab");
  m.max_seq = static_cast<int>(cfg.count("max_position_embeddings", "max_seq", 0));
  // Every supported configuration class defaults tie_word_embeddings to false.
  m.tied_embeddings = cfg.boolean("tie_word_embeddings", false);
  if (!cfg.find("head_dim") && m.hidden % m.heads != 0)
    cfg.fail("hidden_size", std::to_string(m.hidden) + " is not a multiple of num_attention_heads " + std::to_string(m.heads) +
                                " and head_dim is not given");
  m.head_dim = static_cast<int>(cfg.count("head_dim", "head_dim", m.hidden / m.heads));
  // Released configs set these to 0.0 (inference defaults); a fine-tuning config may not.
  m.dropout = cfg.number("attention_dropout", 0.0) > 0 || cfg.number("hidden_dropout", 0.0) > 0;
  const double eps = cfg.find("rms_norm_eps") ? cfg.number("rms_norm_eps", 1e-5) : cfg.number("layer_norm_eps", 1e-5);
  if (eps > 0) m.norm_eps = eps;
}

// Llama-style decoders: RMSNorm, gated SiLU MLP (SwiGLU), RoPE.
void read_llama_like(const ConfigReader& cfg, const json& root, ModelSpec& m) {
  read_common(cfg, m);
  check_activation(cfg, {"silu", "swish"});
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  m.rotary_fraction = rotary_fraction_of(cfg, root, 1.0, &m);
  // attention_bias puts a bias on q, k, v and o (LlamaAttention); ModelSpec keeps the q, k, v
  // part, the o bias (hidden parameters per layer) is not represented.
  m.qkv_bias = cfg.boolean("attention_bias", false);
}

// Nemotron (transformers' NemotronConfig: Nemotron-4, Minitron): LayerNorm1P (a LayerNorm whose
// weight is stored offset by one), a squared-ReLU MLP of two matrices, RoPE on
// partial_rotary_factor (default 0.5) of each head, no biases unless attention_bias / mlp_bias.
void read_nemotron(const ConfigReader& cfg, const json& root, ModelSpec& m) {
  read_common(cfg, m);
  check_activation(cfg, {"relu2"});
  m.ffn = cfg.count("intermediate_size", "ffn");
  m.norm = NormKind::LayerNorm;
  m.activation = Activation::SquaredReLU;
  m.rotary_fraction = rotary_fraction_of(cfg, root, 0.5, &m);
  if (const double eps = cfg.number("norm_eps", 0.0); eps > 0) m.norm_eps = eps;
  m.qkv_bias = cfg.boolean("attention_bias", false);
  m.linear_bias = cfg.boolean("mlp_bias", false);
}

void read_gpt_neox(const ConfigReader& cfg, const json& root, ModelSpec& m) {
  read_common(cfg, m);
  check_activation(cfg, {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  m.ffn = cfg.count("intermediate_size", "ffn");
  m.norm = NormKind::LayerNorm;
  m.activation = Activation::GELU;
  // GPTNeoXConfig defaults: use_parallel_residual true, rotary_pct 0.25; biases on every linear.
  m.parallel_residual = cfg.boolean("use_parallel_residual", true);
  double fraction = rotary_fraction_of(cfg, root, 0.25, &m);
  if (cfg.find("rotary_pct")) fraction = cfg.number("rotary_pct", fraction);
  m.rotary_fraction = fraction;
  m.linear_bias = true;
  m.qkv_bias = cfg.boolean("attention_bias", true);
  if (!m.qkv_bias) cfg.fail("attention_bias", "false is not supported (ModelSpec keeps GPT-NeoX's MLP and attention biases together)");
}

void read_qwen3_moe(const ConfigReader& cfg, ModelSpec& m) {
  m.moe.num_experts = static_cast<int>(cfg.count("num_experts", "moe.experts"));
  m.moe.top_k = static_cast<int>(cfg.count("num_experts_per_tok", "moe.top_k"));
  m.moe.expert_ffn = cfg.count("moe_intermediate_size", "moe.expert_ffn");
  m.ffn = cfg.count("intermediate_size", "ffn", 0);
  // Qwen3MoeDecoderLayer: layer i is sparse when i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0, i.e. layers step-1, 2*step-1, ...
  const long long step = cfg.count("decoder_sparse_step", "moe.layer_frequency", 1);
  m.moe.layer_frequency = static_cast<int>(step);
  m.moe.first_k_dense = static_cast<int>(step - 1);
  if (const json* dense = cfg.find("mlp_only_layers")) {
    if (!dense->is_array()) cfg.fail("mlp_only_layers", "expected a list of layer indices, got " + dense->dump());
    // Only a leading run 0..k-1 with step 1 fits ModelSpec's first_k_dense.
    if (dense->size() > std::size_t(m.layers)) cfg.fail("mlp_only_layers", "lists more layers than num_hidden_layers");
    for (std::size_t i = 0; i < dense->size(); ++i)
      if (cfg.as_integer((*dense)[i], "mlp_only_layers") != static_cast<long long>(i) || step != 1)
        cfg.fail("mlp_only_layers", "only a leading run 0, 1, ..., k-1 with decoder_sparse_step 1 is supported, got " +
                                        dense->dump());
    if (!dense->empty()) m.moe.first_k_dense = static_cast<int>(dense->size());
  }
}

void read_deepseek(const ConfigReader& cfg, const json& root, ModelSpec& m, bool v3) {
  read_common(cfg, m);
  check_activation(cfg, {"silu", "swish"});
  m.norm = NormKind::RMSNorm;
  m.activation = Activation::SwiGLU;
  m.ffn = cfg.count("intermediate_size", "ffn");
  auto& a = m.mla;
  a.enabled = true;
  a.q_lora_rank = static_cast<int>(cfg.count("q_lora_rank", "mla.q_lora_rank", 0));  // null in DeepSeek-V2-Lite: plain q_proj
  a.kv_lora_rank = static_cast<int>(cfg.count("kv_lora_rank", "mla.kv_lora_rank"));
  a.qk_nope_head_dim = static_cast<int>(cfg.count("qk_nope_head_dim", "mla.qk_nope_head_dim"));
  a.qk_rope_head_dim = static_cast<int>(cfg.count("qk_rope_head_dim", "mla.qk_rope_head_dim"));
  a.v_head_dim = static_cast<int>(cfg.count("v_head_dim", "mla.v_head_dim"));
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  rotary_fraction_of(cfg, root, 1.0, &m);
  // RoPE touches only the decoupled rope part of each query/key head.
  m.rotary_fraction = m.head_dim > 0 ? double(a.qk_rope_head_dim) / m.head_dim : 0.0;
  if (cfg.find("n_routed_experts")) {
    m.moe.num_experts = static_cast<int>(cfg.count("n_routed_experts", "moe.experts"));
    m.moe.top_k = static_cast<int>(cfg.count("num_experts_per_tok", "moe.top_k"));
    m.moe.expert_ffn = cfg.count("moe_intermediate_size", "moe.expert_ffn");
    // DeepseekV3MLP(intermediate_size = moe_intermediate_size * n_shared_experts) holds the same
    // parameters as n_shared_experts experts of moe_intermediate_size each (no biases).
    m.moe.shared_experts = static_cast<int>(cfg.count("n_shared_experts", "moe.shared_experts", 0));
    // DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0.
    // ModelSpec counts from the first MoE layer, so start at the first multiple of the frequency.
    const long long first = cfg.count("first_k_dense_replace", "moe.first_k_dense", 0);
    const long long freq = cfg.count("moe_layer_freq", "moe.layer_frequency", 1);
    m.moe.layer_frequency = static_cast<int>(freq);
    m.moe.first_k_dense = static_cast<int>((first + freq - 1) / freq * freq);
    // V3 balances experts with a learned per-expert score bias (topk_method "noaux_tc").
    m.moe.router_bias = v3 && cfg.string("topk_method", "noaux_tc") == "noaux_tc";
  }
}

}  // namespace

const std::vector<std::string>& supported_hf_model_types() {
  static const std::vector<std::string> types = {"deepseek_v2", "deepseek_v3", "gpt_neox", "llama",    "mistral",
                                                 "mixtral",     "nemotron",    "qwen2",    "qwen3", "qwen3_moe"};
  return types;
}

ModelSpec parse_hf_config(const std::string& json_text, const std::string& source, const std::string& name) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw Error(source + ":" + line_and_column(json_text, e.byte) + ": malformed JSON (byte " + std::to_string(e.byte) +
                "): " + e.what());
  } catch (const json::exception& e) {  // e.g. a number too large for a double (out_of_range.406)
    throw Error(source + ": malformed JSON: " + e.what());
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
  } else if (type == "nemotron") {
    read_nemotron(cfg, root, m);
  } else if (type == "deepseek_v2" || type == "deepseek_v3") {
    read_deepseek(cfg, root, m, type == "deepseek_v3");
  } else {
    read_llama_like(cfg, root, m);
    if (type == "qwen2") m.qkv_bias = true;  // Qwen2Attention: q, k, v always carry a bias
    if (type == "qwen3" || type == "qwen3_moe") m.qk_norm = true;
    if (type == "mixtral") {
      m.ffn = cfg.count("intermediate_size", "moe.expert_ffn");
      m.moe.num_experts = static_cast<int>(cfg.count("num_local_experts", "moe.experts"));
      m.moe.top_k = static_cast<int>(cfg.count("num_experts_per_tok", "moe.top_k"));
      m.moe.expert_ffn = m.ffn;
    } else if (type == "qwen3_moe") {
      read_qwen3_moe(cfg, m);
    } else {
      m.ffn = cfg.count("intermediate_size", "ffn");
    }
  }
  validate_model(m, source);
  return m;
}

std::string hf_model_name(const std::string& path) {
  const std::filesystem::path p(path);
  std::string name = p.stem().string();
  if (p.filename() == "config.json") {
    std::error_code ec;
    const auto folder = std::filesystem::absolute(p, ec).parent_path().filename().string();
    if (!folder.empty()) name = folder;
  }
  return name;
}

ModelSpec load_hf_config(const std::string& path) {
  return parse_hf_config(read_text_file(path, limits::kConfigFileBytes, "config.json files"), path, hf_model_name(path));
}

}  // namespace sixfold
