#include "models/model_zoo.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/suggest.hpp"
#include "common/yaml_util.hpp"
#include "models/hf_config.hpp"

namespace sixfold {

namespace {

constexpr const char* kZooFolder = "models/zoo";

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

// Unknown keys are reported with the allowed ones: a misspelt "kv_head" must not silently
// leave kv_heads at its default.
void reject_unknown_fields(const YamlDoc& doc, const YAML::Node& map, const std::string& where,
                           const std::vector<std::string>& allowed) {
  for (const auto& item : map) {
    const std::string key = item.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      yaml_field_error(doc, item.first, where + key, "unknown field (allowed: " + join(allowed, ", ") + ")");
  }
}

// An integer field within the range model_field_range gives it ("moe.experts" for key "experts"
// under prefix "moe.").
long long count(const YamlDoc& doc, const YAML::Node& parent, const std::string& key, std::optional<long long> fallback,
                const std::string& prefix = "") {
  const FieldRange r = model_field_range(prefix + key);
  return yaml_count(doc, parent, key, r.min, r.max, fallback, prefix + key);
}

NormKind parse_norm(const YamlDoc& doc, const YAML::Node& root) {
  const std::string text = required<std::string>(doc, root, "norm");
  if (text == "layernorm") return NormKind::LayerNorm;
  if (text == "rmsnorm") return NormKind::RMSNorm;
  yaml_field_error(doc, root["norm"], "norm", "unknown value '" + text + "' (allowed: layernorm, rmsnorm)");
}

Activation parse_activation(const YamlDoc& doc, const YAML::Node& root) {
  const std::string text = required<std::string>(doc, root, "activation");
  if (text == "gelu") return Activation::GELU;
  if (text == "swiglu") return Activation::SwiGLU;
  if (text == "squared-relu") return Activation::SquaredReLU;
  yaml_field_error(doc, root["activation"], "activation",
                   "unknown value '" + text + "' (allowed: gelu, swiglu, squared-relu)");
}

std::string stem_of(const std::string& source) {
  std::string s = source;
  const auto slash = s.find_last_of("/\\");
  if (slash != std::string::npos) s = s.substr(slash + 1);
  const auto dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(0, dot);
}

void parse_moe(const YamlDoc& doc, const YAML::Node& node, MoeSpec& moe) {
  reject_unknown_fields(doc, node, "moe.",
                        {"experts", "top_k", "expert_ffn", "shared_experts", "shared_expert_ffn", "first_k_dense",
                         "layer_frequency", "capacity_factor", "router_bias"});
  moe.num_experts = int(count(doc, node, "experts", std::nullopt, "moe."));
  moe.top_k = int(count(doc, node, "top_k", std::nullopt, "moe."));
  moe.expert_ffn = count(doc, node, "expert_ffn", std::nullopt, "moe.");
  moe.shared_experts = int(count(doc, node, "shared_experts", 0, "moe."));
  moe.shared_expert_ffn = count(doc, node, "shared_expert_ffn", 0, "moe.");
  moe.first_k_dense = int(count(doc, node, "first_k_dense", 0, "moe."));
  moe.layer_frequency = int(count(doc, node, "layer_frequency", 1, "moe."));
  moe.capacity_factor = yaml_number(doc, node, "capacity_factor", 0.0, 1000.0, 0.0, "moe.capacity_factor");
  moe.router_bias = optional<bool>(doc, node, "router_bias", false);
}

void parse_mla(const YamlDoc& doc, const YAML::Node& node, MlaSpec& mla) {
  reject_unknown_fields(doc, node, "mla.",
                        {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  mla.enabled = true;
  mla.q_lora_rank = int(count(doc, node, "q_lora_rank", 0, "mla."));
  mla.kv_lora_rank = int(count(doc, node, "kv_lora_rank", std::nullopt, "mla."));
  mla.qk_nope_head_dim = int(count(doc, node, "qk_nope_head_dim", std::nullopt, "mla."));
  mla.qk_rope_head_dim = int(count(doc, node, "qk_rope_head_dim", std::nullopt, "mla."));
  mla.v_head_dim = int(count(doc, node, "v_head_dim", std::nullopt, "mla."));
}

bool looks_like_json(const std::string& path, const std::string& text) {
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") return true;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  return false;
}

}  // namespace

ModelSpec parse_model_yaml(const std::string& text, const std::string& source) {
  const YamlDoc doc = parse_yaml(text, source);
  const YAML::Node& root = doc.root;
  if (!root.IsMap()) throw Error(source + ": a model description must be a YAML mapping of fields");
  reject_unknown_fields(doc, root, "",
                        {"name", "source", "layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab",
                         "max_seq", "tied_embeddings", "norm", "activation", "parallel_residual", "rotary_fraction",
                         "rope_theta", "rope_scaling_factor", "norm_eps",
                         "qkv_bias", "linear_bias", "qk_norm", "learned_positions", "dropout", "moe", "mla"});
  ModelSpec m;
  m.name = optional<std::string>(doc, root, "name", stem_of(source));
  m.layers = int(count(doc, root, "layers", std::nullopt));
  m.hidden = count(doc, root, "hidden", std::nullopt);
  m.heads = int(count(doc, root, "heads", std::nullopt));
  m.kv_heads = int(count(doc, root, "kv_heads", m.heads));
  m.vocab = count(doc, root, "vocab", std::nullopt);
  m.max_seq = int(count(doc, root, "max_seq", 0));
  m.tied_embeddings = optional<bool>(doc, root, "tied_embeddings", false);
  m.norm = parse_norm(doc, root);
  m.activation = parse_activation(doc, root);
  m.parallel_residual = optional<bool>(doc, root, "parallel_residual", false);
  m.rotary_fraction = yaml_number(doc, root, "rotary_fraction", 0.0, 1.0, 1.0);
  m.rope_theta = yaml_number(doc, root, "rope_theta", 1.0, 1e9, 10000.0);
  m.rope_scaling_factor = yaml_number(doc, root, "rope_scaling_factor", 0.0, 1024.0, 0.0);
  m.norm_eps = yaml_number(doc, root, "norm_eps", 1e-12, 1e-2, 1e-5);
  m.qkv_bias = optional<bool>(doc, root, "qkv_bias", false);
  m.linear_bias = optional<bool>(doc, root, "linear_bias", false);
  m.qk_norm = optional<bool>(doc, root, "qk_norm", false);
  m.learned_positions = optional<bool>(doc, root, "learned_positions", false);
  m.dropout = optional<bool>(doc, root, "dropout", false);
  if (m.learned_positions && m.max_seq <= 0)
    yaml_field_error(doc, root, "max_seq", "needed with learned_positions (the position table has max_seq rows)");
  if (const YAML::Node moe = root["moe"]) {
    if (!moe.IsMap()) yaml_field_error(doc, moe, "moe", "must be a mapping of MoE fields");
    parse_moe(doc, moe, m.moe);
  }
  if (const YAML::Node mla = root["mla"]) {
    if (!mla.IsMap()) yaml_field_error(doc, mla, "mla", "must be a mapping of MLA fields");
    parse_mla(doc, mla, m.mla);
  }
  // Dense FFN size: a model whose every layer is MoE may leave it out.
  const bool all_moe = m.moe.enabled() && m.moe.first_k_dense == 0 && m.moe.layer_frequency == 1;
  m.ffn = all_moe ? count(doc, root, "ffn", 0) : count(doc, root, "ffn", std::nullopt);
  if (!all_moe && m.ffn == 0) yaml_field_error(doc, root["ffn"], "ffn", "must be positive (layers with a dense FFN use it)");
  // head_dim defaults to hidden / heads; under MLA the query/key width is nope + rope.
  int default_head_dim = m.heads > 0 ? static_cast<int>(m.hidden / m.heads) : 0;
  if (m.mla.enabled) default_head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.head_dim = int(count(doc, root, "head_dim", 0));
  if (m.head_dim == 0) {
    if (!m.mla.enabled && m.hidden % m.heads != 0)
      yaml_field_error(doc, root, "head_dim",
                       "missing, and hidden " + std::to_string(m.hidden) + " is not a multiple of heads " +
                           std::to_string(m.heads) + " (give head_dim)");
    m.head_dim = default_head_dim;
  }
  validate_model(m, source);
  return m;
}

std::vector<std::string> builtin_model_names() { return builtin_names(kZooFolder); }

namespace {
std::optional<std::string_view> builtin_model_text(const std::string& name) {
  return builtin_text(std::string(kZooFolder) + "/" + name + ".yaml");
}

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml") || ends_with(".json");
}

[[noreturn]] void unknown_model(const std::string& name_or_path) {
  const std::string hint = did_you_mean(name_or_path, builtin_model_names());
  if (!hint.empty())
    throw UsageError("unknown model '" + name_or_path + "'" + hint + "; see `sixfold models` for the built-in names");
  throw UsageError("unknown model '" + name_or_path + "': not a built-in name nor an existing file (built-in: " +
                   join(builtin_model_names(), ", ") + "; or give a path to a zoo YAML or a Hugging Face config.json)");
}
}  // namespace

std::string builtin_model_source(const std::string& name) {
  const auto text = builtin_model_text(name);
  if (!text) unknown_model(name);
  const YamlDoc doc = parse_yaml(std::string(*text), "built-in " + std::string(kZooFolder) + "/" + name + ".yaml");
  return optional<std::string>(doc, doc.root, "source", "");
}

ModelSpec load_model(const std::string& name_or_path) {
  if (const auto text = builtin_model_text(name_or_path))
    return parse_model_yaml(std::string(*text), "built-in " + std::string(kZooFolder) + "/" + name_or_path + ".yaml");
  std::error_code ec;
  // A downloaded Hugging Face checkpoint folder: read its config.json.
  if (std::filesystem::is_directory(name_or_path, ec)) {
    const auto config = std::filesystem::path(name_or_path) / "config.json";
    if (!std::filesystem::is_regular_file(config, ec))
      throw UsageError("model folder '" + name_or_path + "' has no config.json");
    return load_hf_config(config.string());
  }
  if (!std::filesystem::exists(name_or_path, ec)) {
    // A path that is not there is a missing file (exit 1), like every other file named on the command line.
    if (looks_like_path(name_or_path)) throw Error("cannot open '" + name_or_path + "': No such file or directory");
    unknown_model(name_or_path);
  }
  const std::string text = read_text_file(name_or_path, limits::kConfigFileBytes, "model files");
  if (looks_like_json(name_or_path, text)) return parse_hf_config(text, name_or_path, hf_model_name(name_or_path));
  return parse_model_yaml(text, name_or_path);
}

}  // namespace sixfold
