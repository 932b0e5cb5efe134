#include "simulator/scenario.hpp"

#include "common/builtin_data.hpp"
#include "models/model_zoo.hpp"

namespace sixfold {

namespace {

template <typename E>
E parse_enum_field(const YamlDoc& doc, const YAML::Node& node, const std::string& field, E fallback,
                   E (*parse)(const std::string&)) {
  if (!node[field]) return fallback;
  const std::string text = required<std::string>(doc, node, field);
  try {
    return parse(text);
  } catch (const UsageError& e) {
    yaml_field_error(doc, node[field], field, e.what());
  }
}

}  // namespace

// A misspelt field would silently keep its default: name it, with the fields `section` has.
void reject_unknown_fields(const YamlDoc& doc, const YAML::Node& n, const std::string& section,
                           std::initializer_list<const char*> known) {
  if (!n.IsMap()) yaml_field_error(doc, n, section, "must be a mapping");
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      std::string allowed;
      for (const char* k : known) allowed += std::string(allowed.empty() ? "" : ", ") + k;
      yaml_field_error(doc, kv.first, section + "." + key, "unknown field (allowed: " + allowed + ")");
    }
  }
}

Layout parse_layout(const YamlDoc& doc, const YAML::Node& n) {
  Layout l;
  if (!n) return l;
  reject_unknown_fields(doc, n, "layout",
                        {"dp", "tp", "pp", "vpp", "cp", "ep", "etp", "sp", "zero", "micro_batch", "recompute",
                         "recompute_modules", "dp_overlap", "bucket_size", "tp_overlap", "schedule",
                         "first_stage_layers", "last_stage_layers", "account_for_embedding_in_pipeline_split",
                         "account_for_loss_in_pipeline_split"});
  l.dp = optional<int>(doc, n, "dp", 1);
  l.tp = optional<int>(doc, n, "tp", 1);
  l.pp = optional<int>(doc, n, "pp", 1);
  l.vpp = optional<int>(doc, n, "vpp", 1);
  l.cp = optional<int>(doc, n, "cp", 1);
  l.ep = optional<int>(doc, n, "ep", 1);
  l.etp = optional<int>(doc, n, "etp", 1);
  l.sp = optional<bool>(doc, n, "sp", false);
  l.zero = optional<int>(doc, n, "zero", 0);
  l.micro_batch = optional<Count>(doc, n, "micro_batch", 1);
  l.recompute = parse_enum_field(doc, n, "recompute", Recompute::None, &parse_recompute);
  if (n["recompute_modules"]) {
    try {
      l.recompute_modules = parse_recompute_modules(required<std::string>(doc, n, "recompute_modules"));
    } catch (const UsageError& e) {
      yaml_field_error(doc, n["recompute_modules"], "recompute_modules", e.what());
    }
  }
  l.dp_overlap = parse_enum_field(doc, n, "dp_overlap", DpOverlap::Bucketed, &parse_dp_overlap);
  l.schedule = parse_enum_field(doc, n, "schedule", l.vpp > 1 ? Schedule::Interleaved : Schedule::OneFOneB, &parse_schedule);
  if (n["bucket_size"]) {
    try {
      l.bucket_bytes = parse_size(required<std::string>(doc, n, "bucket_size"));
    } catch (const UsageError& e) {
      yaml_field_error(doc, n["bucket_size"], "bucket_size", e.what());
    }
  }
  l.tp_overlap = optional<bool>(doc, n, "tp_overlap", false);
  l.first_stage_layers = optional<int>(doc, n, "first_stage_layers", 0);
  l.last_stage_layers = optional<int>(doc, n, "last_stage_layers", 0);
  l.embedding_in_pipeline_split = optional<bool>(doc, n, "account_for_embedding_in_pipeline_split", false);
  l.loss_in_pipeline_split = optional<bool>(doc, n, "account_for_loss_in_pipeline_split", false);
  return l;
}

Workload parse_workload(const YamlDoc& doc, const YAML::Node& n) {
  Workload w;
  if (!n) yaml_field_error(doc, doc.root, "workload", "missing (seq, global_batch, dtype)");
  reject_unknown_fields(doc, n, "workload",
                        {"seq", "global_batch", "dtype", "flash_attention", "framework", "adam_moments",
                         "activation_func_fp8_input_store", "mtp_num_layers"});
  w.seq = required<Count>(doc, n, "seq");
  w.global_batch = required<Count>(doc, n, "global_batch");
  w.dtype = parse_enum_field(doc, n, "dtype", Dtype::BF16, &parse_dtype);
  w.flash_attention = optional<bool>(doc, n, "flash_attention", true);
  w.framework = parse_enum_field(doc, n, "framework", Framework::Megatron, &parse_framework);
  w.bf16_adam_moments = parse_enum_field(doc, n, "adam_moments", false, &parse_adam_moments);
  w.fp8_activation_input_store = optional<bool>(doc, n, "activation_func_fp8_input_store", false);
  w.mtp_layers = optional<int>(doc, n, "mtp_num_layers", 0);
  if (w.mtp_layers < 0) yaml_field_error(doc, n["mtp_num_layers"], "mtp_num_layers", "must not be negative");
  if (w.seq <= 0) yaml_field_error(doc, n["seq"], "seq", "must be positive");
  if (w.global_batch <= 0) yaml_field_error(doc, n["global_batch"], "global_batch", "must be positive");
  return w;
}

Scenario parse_scenario(const YamlDoc& doc) {
  const YAML::Node& r = doc.root;
  if (!r || !r.IsMap()) throw Error(doc.source + ": not a scenario or plan file (expected a YAML mapping)");
  if (r["schema_version"]) {
    const int v = required<int>(doc, r, "schema_version");
    if (v != kPlanSchemaVersion)
      yaml_field_error(doc, r["schema_version"], "schema_version",
                       "this sixfold reads plan schema version " + std::to_string(kPlanSchemaVersion) + ", not " +
                           std::to_string(v));
  }
  Scenario s;
  s.name = optional<std::string>(doc, r, "name", "");
  s.description = optional<std::string>(doc, r, "description", "");
  const YAML::Node model = r["model"];
  if (!model) yaml_field_error(doc, r, "model", "missing (a zoo name, a path, or {name, architecture})");
  if (model.IsScalar()) {
    s.model_name = model.as<std::string>();
    try {
      s.model = load_model(s.model_name);
    } catch (const UsageError& e) {
      yaml_field_error(doc, model, "model", e.what());
    }
  } else {
    s.model_name = optional<std::string>(doc, model, "name", "");
    const YAML::Node arch = model["architecture"];
    if (!arch) yaml_field_error(doc, model, "model.architecture", "missing");
    YAML::Emitter e;
    e << arch;
    s.model = parse_model_yaml(e.c_str(), doc.source + " (model.architecture)");
  }
  const YAML::Node hw = r["hardware"];
  if (!hw) yaml_field_error(doc, r, "hardware", "missing (a built-in name or a path)");
  s.hardware_name = hw.IsScalar() ? hw.as<std::string>() : optional<std::string>(doc, hw, "name", "");
  try {
    s.hardware = load_hardware(s.hardware_name);
  } catch (const UsageError& e) {
    yaml_field_error(doc, hw, "hardware", e.what());
  }
  if (r["gpus_per_node"]) s.hardware.gpus_per_node = required<int>(doc, r, "gpus_per_node");
  s.work = parse_workload(doc, r["workload"]);
  s.layout = parse_layout(doc, r["layout"]);
  s.gpus = optional<int>(doc, r, "gpus", s.layout.gpus());
  if (!r["layout"] || !r["layout"]["dp"]) s.layout.dp = std::max(1, s.gpus / (s.layout.tp * s.layout.pp * s.layout.cp));
  return s;
}

Scenario load_scenario(const std::string& name_or_path) {
  const std::string builtin = "configs/scenarios/" + name_or_path + ".yaml";
  if (auto text = builtin_text(builtin)) return parse_scenario(parse_yaml(std::string(*text), "built-in " + builtin));
  if (name_or_path.find('/') == std::string::npos && name_or_path.find(".yaml") == std::string::npos) {
    std::string names;
    for (const auto& n : builtin_scenario_names()) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("unknown scenario '" + name_or_path + "' (available: " + names + ")");
  }
  return parse_scenario(load_yaml_file(name_or_path));
}

std::vector<std::string> builtin_scenario_names() { return builtin_names("configs/scenarios"); }

void emit_model(YAML::Emitter& o, const ModelSpec& m) {
  o << YAML::BeginMap;
  o << YAML::Key << "name" << YAML::Value << m.name;
  o << YAML::Key << "layers" << YAML::Value << m.layers;
  o << YAML::Key << "hidden" << YAML::Value << m.hidden;
  o << YAML::Key << "ffn" << YAML::Value << m.ffn;
  o << YAML::Key << "heads" << YAML::Value << m.heads;
  o << YAML::Key << "kv_heads" << YAML::Value << m.kv_heads;
  o << YAML::Key << "head_dim" << YAML::Value << m.head_dim;
  o << YAML::Key << "vocab" << YAML::Value << m.vocab;
  o << YAML::Key << "max_seq" << YAML::Value << m.max_seq;
  o << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
  o << YAML::Key << "norm" << YAML::Value << (m.norm == NormKind::LayerNorm ? "layernorm" : "rmsnorm");
  o << YAML::Key << "activation" << YAML::Value << (m.activation == Activation::GELU ? "gelu" : "swiglu");
  o << YAML::Key << "parallel_residual" << YAML::Value << m.parallel_residual;
  o << YAML::Key << "rotary_fraction" << YAML::Value << m.rotary_fraction;
  o << YAML::Key << "qkv_bias" << YAML::Value << m.qkv_bias;
  o << YAML::Key << "linear_bias" << YAML::Value << m.linear_bias;
  o << YAML::Key << "qk_norm" << YAML::Value << m.qk_norm;
  o << YAML::Key << "learned_positions" << YAML::Value << m.learned_positions;
  o << YAML::Key << "dropout" << YAML::Value << m.dropout;
  if (m.moe.enabled()) {
    o << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
    o << YAML::Key << "experts" << YAML::Value << m.moe.num_experts;
    o << YAML::Key << "top_k" << YAML::Value << m.moe.top_k;
    o << YAML::Key << "expert_ffn" << YAML::Value << m.moe.expert_ffn;
    o << YAML::Key << "shared_experts" << YAML::Value << m.moe.shared_experts;
    o << YAML::Key << "shared_expert_ffn" << YAML::Value << m.moe.shared_expert_ffn;
    o << YAML::Key << "first_k_dense" << YAML::Value << m.moe.first_k_dense;
    o << YAML::Key << "layer_frequency" << YAML::Value << m.moe.layer_frequency;
    o << YAML::Key << "capacity_factor" << YAML::Value << m.moe.capacity_factor;
    o << YAML::Key << "router_bias" << YAML::Value << m.moe.router_bias;
    o << YAML::EndMap;
  }
  if (m.mla.enabled) {
    o << YAML::Key << "mla" << YAML::Value << YAML::BeginMap;
    o << YAML::Key << "q_lora_rank" << YAML::Value << m.mla.q_lora_rank;
    o << YAML::Key << "kv_lora_rank" << YAML::Value << m.mla.kv_lora_rank;
    o << YAML::Key << "qk_nope_head_dim" << YAML::Value << m.mla.qk_nope_head_dim;
    o << YAML::Key << "qk_rope_head_dim" << YAML::Value << m.mla.qk_rope_head_dim;
    o << YAML::Key << "v_head_dim" << YAML::Value << m.mla.v_head_dim;
    o << YAML::EndMap;
  }
  o << YAML::EndMap;
}

void emit_layout(YAML::Emitter& o, const Layout& l) {
  o << YAML::BeginMap;
  o << YAML::Key << "dp" << YAML::Value << l.dp;
  o << YAML::Key << "tp" << YAML::Value << l.tp;
  o << YAML::Key << "pp" << YAML::Value << l.pp;
  o << YAML::Key << "vpp" << YAML::Value << l.vpp;
  o << YAML::Key << "cp" << YAML::Value << l.cp;
  o << YAML::Key << "ep" << YAML::Value << l.ep;
  o << YAML::Key << "etp" << YAML::Value << l.etp;
  o << YAML::Key << "sp" << YAML::Value << l.sp;
  o << YAML::Key << "zero" << YAML::Value << l.zero;
  o << YAML::Key << "micro_batch" << YAML::Value << l.micro_batch;
  o << YAML::Key << "recompute" << YAML::Value << to_string(l.recompute);
  if (l.recompute_modules != 0) o << YAML::Key << "recompute_modules" << YAML::Value << recompute_modules_string(l.recompute_modules);
  o << YAML::Key << "dp_overlap" << YAML::Value << to_string(l.dp_overlap);
  if (l.bucket_bytes > 0) o << YAML::Key << "bucket_size" << YAML::Value << (std::to_string(static_cast<long long>(l.bucket_bytes)) + "B");
  o << YAML::Key << "tp_overlap" << YAML::Value << l.tp_overlap;
  o << YAML::Key << "schedule" << YAML::Value << to_string(l.schedule);
  o << YAML::Key << "first_stage_layers" << YAML::Value << l.first_stage_layers;
  o << YAML::Key << "last_stage_layers" << YAML::Value << l.last_stage_layers;
  if (l.embedding_in_pipeline_split) o << YAML::Key << "account_for_embedding_in_pipeline_split" << YAML::Value << true;
  if (l.loss_in_pipeline_split) o << YAML::Key << "account_for_loss_in_pipeline_split" << YAML::Value << true;
  o << YAML::EndMap;
}

void emit_workload(YAML::Emitter& o, const Workload& w) {
  o << YAML::BeginMap;
  o << YAML::Key << "seq" << YAML::Value << w.seq;
  o << YAML::Key << "global_batch" << YAML::Value << w.global_batch;
  o << YAML::Key << "dtype" << YAML::Value << to_string(w.dtype);
  o << YAML::Key << "flash_attention" << YAML::Value << w.flash_attention;
  o << YAML::Key << "framework" << YAML::Value << to_string(w.framework);
  if (w.bf16_adam_moments) o << YAML::Key << "adam_moments" << YAML::Value << "bf16";
  if (w.fp8_activation_input_store) o << YAML::Key << "activation_func_fp8_input_store" << YAML::Value << true;
  if (w.mtp_layers > 0) o << YAML::Key << "mtp_num_layers" << YAML::Value << w.mtp_layers;
  o << YAML::EndMap;
}

}  // namespace sixfold
