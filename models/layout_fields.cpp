#include "models/layout_fields.hpp"

#include <algorithm>
#include <cctype>

#include "common/error.hpp"
#include "common/parse.hpp"
#include "models/pipeline_layout.hpp"

namespace sixfold {

namespace {
std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

bool parse_flag(const std::string& text, const std::string& where) {
  std::string t = trim(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  throw UsageError(where + ": '" + text + "' is not true or false (allowed: true, false)");
}

namespace {

// A field's text as a parser of its type reads it, with `where` in the message.
template <class E>
E parse_enum(E (*parse)(const std::string&), const std::string& text, const std::string& where) {
  try {
    return parse(trim(text));
  } catch (const UsageError& e) {
    throw UsageError(where + ": " + e.what());
  }
}

std::string show(long long v) { return std::to_string(v); }

// Rows for the parallel degrees, which read, write and describe alike.
#define SIXFOLD_DEGREE(NAME, MAX, SHOWN_FROM, FLAG, HELP)                                                      \
  LayoutField {                                                                                             \
    #NAME, nullptr, nullptr, FieldType::Count, 1, MAX, nullptr,                                             \
        [](Layout& l, const std::string& t, const std::string& w) { l.NAME = int(parse_count(t, w, 1, MAX)); }, \
        [](const Layout& l) { return double(l.NAME); }, [](const Layout& l) { return show(l.NAME); }, nullptr,   \
        [](const Layout& l) { return l.NAME >= SHOWN_FROM ? std::string(#NAME "=") + show(l.NAME) : std::string(); }, \
        FLAG, HELP                                                                                            \
  }

// The text of an uneven-pipeline count in describe(): "first-stage-layers=3".
std::string brief_count(const char* name, int v) { return v > 0 ? std::string(name) + "=" + show(v) : std::string(); }

std::string pp_split(const Layout& l) {
  if (!l.accounts_pipeline_split()) return "";
  return std::string("pp-split=") + (l.embedding_in_pipeline_split && l.loss_in_pipeline_split ? "embedding,loss"
                                     : l.embedding_in_pipeline_split                         ? "embedding"
                                                                                              : "loss");
}

std::vector<LayoutField> make_fields() {
  constexpr long long kG = limits::kGpus, kL = limits::kLayers;
  return {
      SIXFOLD_DEGREE(dp, kG, 1, nullptr, nullptr),  // derived from --gpus on the CLI
      SIXFOLD_DEGREE(tp, kG, 1, "--tp", "tensor-parallel size (default 1)"),
      SIXFOLD_DEGREE(pp, kG, 1, "--pp", "pipeline-parallel size (default 1)"),
      SIXFOLD_DEGREE(vpp, kL, 2, "--vpp", "virtual stages per pipeline rank (interleaved 1F1B; default 1)"),
      SIXFOLD_DEGREE(cp, kG, 2, "--cp", "context-parallel size (default 1)"),
      SIXFOLD_DEGREE(ep, kG, 2, "--ep", "expert-parallel size (default 1)"),
      SIXFOLD_DEGREE(etp, kG, 2, "--etp", "expert tensor-parallel size (default 1; Megatron-LM's own default is the TP size, so a run without --expert-tensor-parallel-size is --etp TP here; the Megatron export always writes it)"),
      {"sp", nullptr, nullptr, FieldType::Flag, 0, 1, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.sp = parse_flag(t, w); },
       [](const Layout& l) { return double(l.sp); }, [](const Layout& l) { return std::string(l.sp ? "true" : "false"); },
       nullptr, [](const Layout& l) { return std::string(l.sp ? "sp" : ""); }, "--sp",
       "Megatron sequence parallelism (needs tp > 1)"},
      {"zero", nullptr, nullptr, FieldType::Count, 0, 3, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.zero = int(parse_count(t, w, 0, 3)); },
       [](const Layout& l) { return double(l.zero); }, [](const Layout& l) { return show(l.zero); }, nullptr,
       [](const Layout& l) { return "zero=" + show(l.zero); }, "--zero",
       "ZeRO stage 0-3 (0: plain DDP; 1: distributed optimizer)"},
      {"dp_shard", nullptr, nullptr, FieldType::Count, 0, kG, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.dp_shard = int(parse_count(t, w, 0, kG)); },
       [](const Layout& l) { return double(l.shard_dp()); }, [](const Layout& l) { return show(l.shard_dp()); },
       [](const Layout& l) { return l.shard_dp() == l.dp; },
       [](const Layout& l) { return l.shard_dp() < l.dp ? "dp-shard=" + show(l.shard_dp()) : std::string(); },
       "--dp-shard",
       "hybrid sharding: data-parallel ranks one ZeRO shard spans, the rest of dp replicating it (FSDP's HSDP, "
       "torchtitan's data_parallel_shard_degree, Megatron's dp / --num-distributed-optimizer-instances, DeepSpeed's "
       "mics_shard_size; default: all of dp)"},
      {"micro_batch", nullptr, "mbs", FieldType::Count, 1, limits::kGlobalBatch, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.micro_batch = parse_count(t, w, 1, limits::kGlobalBatch); },
       [](const Layout& l) { return double(l.micro_batch); }, [](const Layout& l) { return show(l.micro_batch); }, nullptr,
       [](const Layout& l) { return "mbs=" + show(l.micro_batch); }, "--micro-batch", "sequences per micro-batch (default 1)"},
      {"recompute", nullptr, nullptr, FieldType::Text, 0, 0, "none, selective, selective-op, full",
       [](Layout& l, const std::string& t, const std::string& w) { l.recompute = parse_enum(&parse_recompute, t, w); },
       nullptr, [](const Layout& l) { return to_string(l.recompute); }, nullptr,
       [](const Layout& l) {
         std::string s = "recompute=" + to_string(l.recompute);
         if (l.recompute == Recompute::Selective && l.recompute_modules != 0) {
           s += '(';
           s += recompute_modules_string(l.recompute_modules);
           s += ')';
         }
         if (l.block_recompute()) s += "(block " + show(l.recompute_num_layers) + ")";
         if (l.recompute == Recompute::Full && l.recompute_every > 0) s += "(every " + show(l.recompute_every) + ")";
         return s;
       },
       "--recompute", "none | selective | selective-op | full (default none)"},
      {"recompute_modules", nullptr, nullptr, FieldType::Text, 0, 0, "Megatron's --recompute-modules names",
       [](Layout& l, const std::string& t, const std::string& w) {
         try {
           l.recompute_modules = parse_recompute_modules(trim(t));
         } catch (const UsageError& e) {
           throw UsageError(w + ": " + e.what());
         }
       },
       nullptr, [](const Layout& l) { return recompute_modules_string(l.recompute_modules); },
       [](const Layout& l) { return l.recompute_modules == 0; }, nullptr,  // described with recompute
       "--recompute-modules",
       "selective recompute's modules, Megatron-Core's names: core_attn (default), mlp, layernorm, mla_up_proj, moe, "
       "moe_act, shared_experts (comma-separated; implies --recompute selective)"},
      {"recompute_num_layers", nullptr, nullptr, FieldType::Count, 0, kL, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.recompute_num_layers = int(parse_count(t, w, 0, kL)); },
       [](const Layout& l) { return double(l.recompute_num_layers); },
       [](const Layout& l) { return show(l.recompute_num_layers); },
       [](const Layout& l) { return l.recompute_num_layers == 0; }, nullptr,  // described with recompute
       "--recompute-num-layers",
       "Megatron's block recompute: under --recompute full, only the first N layers of each (virtual) pipeline stage "
       "recompute, the rest keep their activations (0: every layer; Megatron's --recompute-method block)"},
      {"recompute_every", nullptr, nullptr, FieldType::Count, 0, kL, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.recompute_every = int(parse_count(t, w, 0, kL)); },
       [](const Layout& l) { return double(l.recompute_every); },
       [](const Layout& l) { return show(l.recompute_every); },
       [](const Layout& l) { return l.recompute_every == 0; }, nullptr,  // described with recompute
       "--recompute-every",
       "torchtitan's layer-level selective checkpointing (selective_ac_option k): under --recompute full, every k-th "
       "layer of a rank recomputes, the rest keep their activations (0: every layer)"},
      {"dp_overlap", nullptr, nullptr, FieldType::Text, 0, 0, "none, per-layer, bucketed",
       [](Layout& l, const std::string& t, const std::string& w) { l.dp_overlap = parse_enum(&parse_dp_overlap, t, w); },
       nullptr, [](const Layout& l) { return to_string(l.dp_overlap); }, nullptr, nullptr, "--dp-overlap",
       "none | per-layer | bucketed (default bucketed)"},
      {"bucket_size", "bucket_bytes", nullptr, FieldType::Size, 0, 0, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.bucket_bytes = parse_size(t, w); },
       [](const Layout& l) { return l.bucket_bytes; },
       [](const Layout& l) { return show(static_cast<long long>(l.bucket_bytes)) + "B"; },
       [](const Layout& l) { return l.bucket_bytes <= 0; }, nullptr, "--bucket-size",
       "DP gradient bucket size with a unit, e.g. 25MiB (default: the framework's: Megatron max(40M, 1M x dp) elements, "
       "DeepSpeed 5e8 elements, PyTorch DDP 25MiB)"},
      {"tp_overlap", nullptr, nullptr, FieldType::Flag, 0, 1, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.tp_overlap = parse_flag(t, w); },
       [](const Layout& l) { return double(l.tp_overlap); },
       [](const Layout& l) { return std::string(l.tp_overlap ? "true" : "false"); }, nullptr, nullptr, "--tp-overlap",
       "overlap TP communication with GEMMs"},
      {"schedule", nullptr, nullptr, FieldType::Text, 0, 0, "gpipe, 1f1b, interleaved, zero-bubble",
       [](Layout& l, const std::string& t, const std::string& w) { l.schedule = parse_enum(&parse_schedule, t, w); },
       nullptr, [](const Layout& l) { return to_string(l.schedule); }, nullptr, nullptr, "--schedule",
       "1f1b | interleaved | gpipe | zero-bubble (default 1f1b; interleaved when vpp > 1)"},
      {"first_stage_layers", nullptr, nullptr, FieldType::Count, 0, kL, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.first_stage_layers = int(parse_count(t, w, 0, kL)); },
       [](const Layout& l) { return double(l.first_stage_layers); }, [](const Layout& l) { return show(l.first_stage_layers); },
       [](const Layout& l) { return l.first_stage_layers == 0; },
       [](const Layout& l) { return brief_count("first-stage-layers", l.first_stage_layers); }, "--first-stage-layers",
       "layers on the first pipeline stage (uneven pipelines; 0: even)"},
      {"last_stage_layers", nullptr, nullptr, FieldType::Count, 0, kL, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.last_stage_layers = int(parse_count(t, w, 0, kL)); },
       [](const Layout& l) { return double(l.last_stage_layers); }, [](const Layout& l) { return show(l.last_stage_layers); },
       [](const Layout& l) { return l.last_stage_layers == 0; },
       [](const Layout& l) { return brief_count("last-stage-layers", l.last_stage_layers); }, "--last-stage-layers",
       "layers on the last pipeline stage (uneven pipelines; 0: even)"},
      {"account_for_embedding_in_pipeline_split", nullptr, nullptr, FieldType::Flag, 0, 1, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.embedding_in_pipeline_split = parse_flag(t, w); },
       [](const Layout& l) { return double(l.embedding_in_pipeline_split); },
       [](const Layout& l) { return std::string(l.embedding_in_pipeline_split ? "true" : "false"); },
       [](const Layout& l) { return !l.embedding_in_pipeline_split; }, &pp_split,  // both split fields: one token
       "--account-for-embedding-in-pipeline-split",
       "the embedding takes a layer's place in the first virtual stage (Megatron's flag)"},
      {"account_for_loss_in_pipeline_split", nullptr, nullptr, FieldType::Flag, 0, 1, nullptr,
       [](Layout& l, const std::string& t, const std::string& w) { l.loss_in_pipeline_split = parse_flag(t, w); },
       [](const Layout& l) { return double(l.loss_in_pipeline_split); },
       [](const Layout& l) { return std::string(l.loss_in_pipeline_split ? "true" : "false"); },
       [](const Layout& l) { return !l.loss_in_pipeline_split; },
       [](const Layout& l) { return l.embedding_in_pipeline_split ? std::string() : pp_split(l); },
       "--account-for-loss-in-pipeline-split", "the loss takes a layer's place in the last virtual stage (Megatron's flag)"},
      {"pipeline_model_parallel_layout", nullptr, nullptr, FieldType::Text, 0, 0,
       "a Megatron pipeline layout such as \"Et*3|(tt|)*29,m|L\"",
       [](Layout& l, const std::string& t, const std::string& w) {
         const std::string text = trim(t);
         if (!text.empty()) parse_pipeline_layout(text, w);  // the syntax, here; the counts in validate_layout
         l.pipeline_layout = text;
       },
       nullptr, [](const Layout& l) { return l.pipeline_layout; }, [](const Layout& l) { return l.pipeline_layout.empty(); },
       [](const Layout& l) { return l.pipeline_layout.empty() ? std::string() : "pp-layout=" + l.pipeline_layout; },
       "--pipeline-model-parallel-layout",
       "Megatron's custom pipeline layout: what each virtual stage builds, stages split by '|', E embedding, t "
       "transformer layer, m MTP layer, L loss, X*n and (...)*n repeat, e.g. \"Et*3|(tt|)*29,m|L\" (pp x vpp "
       "stages; sets vpp when --vpp is not given)"},
  };
}
#undef SIXFOLD_DEGREE

}  // namespace

const std::vector<LayoutField>& layout_fields() {
  static const std::vector<LayoutField> fields = make_fields();
  return fields;
}

const LayoutField* find_layout_field(std::string_view key) {
  for (const LayoutField& f : layout_fields())
    if (key == f.key || (f.alias && key == f.alias)) return &f;
  return nullptr;
}

std::vector<std::string> layout_field_keys() {
  std::vector<std::string> keys;
  for (const LayoutField& f : layout_fields()) {
    keys.push_back(f.key);
    if (f.alias) keys.push_back(f.alias);
  }
  return keys;
}

}  // namespace sixfold
