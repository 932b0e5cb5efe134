#include "simulator/io/scenario.hpp"

#include "common/builtin_data.hpp"
#include "common/suggest.hpp"
#include "models/layout_fields.hpp"
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
                           const std::vector<std::string>& known) {
  if (!n.IsMap()) yaml_field_error(doc, n, section, "must be a mapping");
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const std::string& k : known) ok = ok || key == k;
    if (!ok) {
      std::string allowed;
      std::vector<std::string> names;
      for (const std::string& k : known) {
        allowed += (allowed.empty() ? "" : ", ") + k;
        names.push_back(k);
      }
      const std::string hint = closest_name(key, names);
      yaml_field_error(doc, kv.first, section.empty() ? key : section + "." + key,
                       "unknown field (" + (hint.empty() ? "" : "did you mean '" + hint + "'? ") + "allowed: " + allowed + ")");
    }
  }
}

Layout parse_layout(const YamlDoc& doc, const YAML::Node& n) {
  Layout l;
  if (!n) return l;
  std::vector<std::string> keys;
  for (const LayoutField& f : layout_fields()) keys.push_back(f.key);
  reject_unknown_fields(doc, n, "layout", keys);
  for (const LayoutField& f : layout_fields()) {
    const YAML::Node v = n[f.key];
    if (!v || v.IsNull()) continue;
    const std::string path = std::string("layout.") + f.key;
    yaml_parse_scalar(doc, v, path, [&](const std::string& text) {
      f.set(l, text, path);
      return 0;
    });
  }
  // An interleaved schedule is what a vpp above 1 means unless the file says otherwise.
  if (!n["schedule"] && l.vpp > 1) l.schedule = Schedule::Interleaved;
  if (!n["schedule"] && !n["vpp"]) take_vpp_from_pipeline_layout(l);
  return l;
}

Workload parse_workload(const YamlDoc& doc, const YAML::Node& n) {
  Workload w;
  if (!n) yaml_field_error(doc, doc.root, "workload", "missing (seq, global_batch, dtype)");
  reject_unknown_fields(doc, n, "workload",
                        {"seq", "global_batch", "dtype", "flash_attention", "attention_kernel", "cross_entropy", "train_metric_passes", "overlap_p2p_comm", "overlap_moe_expert_parallel_comm", "framework", "adam_moments",
                         "activation_func_fp8_input_store", "mtp_num_layers", "compile", "moe_enable_deepep",
                         "enable_fsdp_float8_all_gather", "float8_recipe", "grad_reduce_in_bf16"});
  w.seq = yaml_count(doc, n, "seq", 1, limits::kSeq, std::nullopt, "workload.seq");
  w.global_batch = yaml_count(doc, n, "global_batch", 1, limits::kGlobalBatch, std::nullopt, "workload.global_batch");
  w.dtype = parse_enum_field(doc, n, "dtype", Dtype::BF16, &parse_dtype);
  w.flash_attention = optional<bool>(doc, n, "flash_attention", true);
  w.framework = parse_enum_field(doc, n, "framework", Framework::Megatron, &parse_framework);
  w.attention_kernel = parse_enum_field(doc, n, "attention_kernel", AttentionKernel::Default, &parse_attention_kernel);
  w.cross_entropy = parse_enum_field(doc, n, "cross_entropy", CrossEntropy::Default, &parse_cross_entropy);
  w.train_metric_passes = int(yaml_count(doc, n, "train_metric_passes", 0, 16, 0, "workload.train_metric_passes"));
  w.overlap_p2p_comm = optional<bool>(doc, n, "overlap_p2p_comm", true);
  w.overlap_moe_ep_comm = optional<bool>(doc, n, "overlap_moe_expert_parallel_comm", false);
  w.deepep_dispatch = optional<bool>(doc, n, "moe_enable_deepep", false);
  w.bf16_adam_moments = parse_enum_field(doc, n, "adam_moments", false, &parse_adam_moments);
  w.grad_reduce_in_bf16 = optional<bool>(doc, n, "grad_reduce_in_bf16", false);
  w.fp8_activation_input_store = optional<bool>(doc, n, "activation_func_fp8_input_store", false);
  w.mtp_layers = int(yaml_count(doc, n, "mtp_num_layers", 0, limits::kMtpLayers, 0, "workload.mtp_num_layers"));
  w.compile = optional<bool>(doc, n, "compile", false);
  w.fsdp_float8_all_gather = optional<bool>(doc, n, "enable_fsdp_float8_all_gather", false);
  w.float8_recipe = parse_enum_field(doc, n, "float8_recipe", Float8Recipe::Tensorwise, &parse_float8_recipe);
  return w;
}

Scenario parse_scenario(const YamlDoc& doc) {
  const YAML::Node& r = doc.root;
  if (!r || !r.IsMap()) throw Error(doc.source + ": not a scenario or plan file (expected a YAML mapping)");
  // schedule, batch and prediction are what a plan file reports; they are read back from layout and workload.
  reject_unknown_fields(doc, r, "",
                        {"schema_version", "name", "description", "model", "hardware", "gpus", "gpus_per_node",
                         "nvlink_domain", "network_bandwidth", "intra_node_bandwidth", "network_latency", "workload", "layout",
                         "schedule", "batch", "prediction"});
  if (r["schema_version"]) {
    const int v = int(yaml_count(doc, r, "schema_version", 0, 1000000));
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
    s.model_name = model.Scalar();
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
  if (!hw.IsScalar()) yaml_field_error(doc, hw, "hardware", "expected a built-in name or a path");
  s.hardware_name = hw.Scalar();
  try {
    s.hardware = load_hardware(s.hardware_name);
  } catch (const Error& e) {
    yaml_field_error(doc, hw, "hardware", e.what());
  }
  // Cluster values a plan was made with (--gpus-per-node, --network-bandwidth, ...): applied over
  // the profile's as the command line applied them.
  ClusterOverrides overrides;
  if (r["gpus_per_node"]) overrides.gpus_per_node = int(yaml_count(doc, r, "gpus_per_node", 1, limits::kGpus));
  if (r["nvlink_domain"]) overrides.nvlink_domain = int(yaml_count(doc, r, "nvlink_domain", 1, limits::kGpus));
  for (const char* key : {"network_bandwidth", "intra_node_bandwidth"}) {
    if (!r[key]) continue;
    const BytesPerSec rate = yaml_parse_scalar(doc, r[key], key, [&](const std::string& t) { return parse_rate(t, key); });
    (std::string(key) == "network_bandwidth" ? overrides.network_bandwidth : overrides.intra_node_bandwidth) = rate;
    overrides.provenance[key] = "override: " + doc.source;
  }
  if (r["network_latency"])
    overrides.network_latency = yaml_parse_scalar(doc, r["network_latency"], "network_latency", [](const std::string& t) {
      return parse_duration(t, "network_latency", 0, 1);
    });
  if (overrides.gpus_per_node) overrides.provenance["gpus_per_node"] = "override: " + doc.source;
  if (overrides.nvlink_domain) overrides.provenance["nvlink_domain"] = "override: " + doc.source;
  if (overrides.network_latency) overrides.provenance["network_latency"] = "override: " + doc.source;
  apply_overrides(s.hardware, overrides);
  s.work = parse_workload(doc, r["workload"]);
  s.layout = parse_layout(doc, r["layout"]);
  if (!r["layout"] || !r["layout"]["dp_overlap"]) s.layout.dp_overlap = default_dp_overlap(s.work.framework, s.layout.pp);
  // torchtitan's tensor parallelism always shards the sequence (SequenceParallel norms): sp comes
  // with tp > 1 where the file gives none, and a file that turns it off is wrong.
  if (s.work.framework == Framework::Torchtitan && s.layout.tp > 1) {
    if (r["layout"]["sp"] && !s.layout.sp)
      yaml_field_error(doc, r["layout"]["sp"], "layout.sp",
                       "false with framework torchtitan and tp > 1: its tensor parallelism always shards the sequence "
                       "(SequenceParallel norms in its TP plan)");
    s.layout.sp = true;
  }
  const Layout& l = s.layout;
  const long long model_parallel = Count(l.tp) * l.pp * l.cp;
  const bool dp_given = r["layout"] && r["layout"]["dp"];
  if (r["gpus"]) {
    s.gpus = int(yaml_count(doc, r, "gpus", 1, limits::kGpus));
    if (s.gpus % model_parallel != 0)
      yaml_field_error(doc, r["gpus"], "gpus",
                       std::to_string(s.gpus) + " is not a multiple of layout tp*pp*cp = " + std::to_string(model_parallel));
    if (dp_given && model_parallel * l.dp != s.gpus)
      yaml_field_error(doc, r["layout"]["dp"], "layout.dp",
                       std::to_string(l.dp) + " disagrees with gpus " + std::to_string(s.gpus) + " / (tp*pp*cp = " +
                           std::to_string(model_parallel) + ") = " + std::to_string(s.gpus / model_parallel));
    s.layout.dp = int(s.gpus / model_parallel);
  } else {
    const long long gpus = model_parallel * l.dp;
    if (gpus > limits::kGpus)
      yaml_field_error(doc, r["layout"], "layout", "dp*tp*pp*cp = " + std::to_string(gpus) + " is above " +
                                                      std::to_string(limits::kGpus) + " GPUs");
    s.gpus = int(gpus);
  }
  return s;
}

Scenario load_scenario(const std::string& name_or_path) {
  const std::string builtin = "configs/scenarios/" + name_or_path + ".yaml";
  if (auto text = builtin_text(builtin)) return parse_scenario(parse_yaml(std::string(*text), "built-in " + builtin));
  if (name_or_path.find('/') == std::string::npos && name_or_path.find(".yaml") == std::string::npos) {
    std::string names;
    for (const auto& n : builtin_scenario_names()) names += (names.empty() ? "" : ", ") + n;
    const std::string hint = did_you_mean(name_or_path, builtin_scenario_names());
    throw UsageError("unknown scenario '" + name_or_path + "'" + (hint.empty() ? " (available: " + names + ")" : hint));
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
  o << YAML::Key << "activation" << YAML::Value
    << (m.activation == Activation::GELU ? "gelu" : m.activation == Activation::SwiGLU ? "swiglu" : "squared-relu");
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
  for (const LayoutField& f : layout_fields()) {
    if (f.at_default && f.at_default(l)) continue;
    o << YAML::Key << f.key << YAML::Value;
    switch (f.type) {
      case FieldType::Count: o << static_cast<long long>(f.number(l)); break;
      case FieldType::Flag: o << (f.number(l) != 0); break;
      case FieldType::Text:
      case FieldType::Size: o << f.text(l); break;
    }
  }
  o << YAML::EndMap;
}

void emit_workload(YAML::Emitter& o, const Workload& w) {
  o << YAML::BeginMap;
  o << YAML::Key << "seq" << YAML::Value << w.seq;
  o << YAML::Key << "global_batch" << YAML::Value << w.global_batch;
  o << YAML::Key << "dtype" << YAML::Value << to_string(w.dtype);
  o << YAML::Key << "flash_attention" << YAML::Value << w.flash_attention;
  o << YAML::Key << "framework" << YAML::Value << to_string(w.framework);
  if (w.attention_kernel != AttentionKernel::Default)
    o << YAML::Key << "attention_kernel" << YAML::Value << to_string(w.attention_kernel);
  if (w.cross_entropy != CrossEntropy::Default)
    o << YAML::Key << "cross_entropy" << YAML::Value << to_string(w.cross_entropy);
  if (w.train_metric_passes > 0) o << YAML::Key << "train_metric_passes" << YAML::Value << w.train_metric_passes;
  if (!w.overlap_p2p_comm) o << YAML::Key << "overlap_p2p_comm" << YAML::Value << false;
  if (w.overlap_moe_ep_comm) o << YAML::Key << "overlap_moe_expert_parallel_comm" << YAML::Value << true;
  if (w.deepep_dispatch) o << YAML::Key << "moe_enable_deepep" << YAML::Value << true;
  if (w.bf16_adam_moments) o << YAML::Key << "adam_moments" << YAML::Value << "bf16";
  if (w.grad_reduce_in_bf16) o << YAML::Key << "grad_reduce_in_bf16" << YAML::Value << true;
  if (w.fp8_activation_input_store) o << YAML::Key << "activation_func_fp8_input_store" << YAML::Value << true;
  if (w.mtp_layers > 0) o << YAML::Key << "mtp_num_layers" << YAML::Value << w.mtp_layers;
  if (w.compile) o << YAML::Key << "compile" << YAML::Value << true;
  if (w.fsdp_float8_all_gather) o << YAML::Key << "enable_fsdp_float8_all_gather" << YAML::Value << true;
  if (w.float8_recipe != Float8Recipe::Tensorwise) o << YAML::Key << "float8_recipe" << YAML::Value << to_string(w.float8_recipe);
  o << YAML::EndMap;
}

}  // namespace sixfold
