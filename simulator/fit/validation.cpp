#include "simulator/fit/validation.hpp"

#include "models/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "models/pipeline_layout.hpp"
#include "simulator/fit/error_band.hpp"
#include "simulator/fit/row_fill.hpp"
#include "simulator/fit/run_facts.hpp"

namespace sixfold {

namespace {

std::optional<double> number(const std::string& s) {
  if (s.empty() || s == "unknown") return std::nullopt;
  try {
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Columns that hold counts (non-negative integers) and measured metrics (finite, positive).
const char* const kCountColumns[] = {"layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "seq", "experts", "topk",
                                     "moe_ffn", "gpus", "gpus_per_node", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "dp_shard", "sp",
                                     "zero", "micro_batch", "global_batch"};

// The run-fact columns of a row (run_facts.hpp), unparsed cells thrown as Error.
RunFacts row_facts(const CsvTable& t, size_t r) {
  return parse_run_facts(t.field(r, "framework"), t.field(r, "framework_date"), t.field(r, "attention"),
                         t.field(r, "dp_overlap"), t.field(r, "tp_overlap"), t.field(r, "compile"),
                         t.field(r, "ep_dispatcher"), t.field(r, "ep_overlap"), t.field(r, "fsdp_float8_all_gather"),
                         t.field(r, "float8_recipe"), t.field(r, "grad_reduce_dtype"));
}

// Every cell the pricing reads is checked before any row is priced: a malformed one is an input
// error naming the file, line, column, value and what is allowed (never a silent skip).
void check_cells(const CsvTable& t) {
  auto line = [&](size_t r) {
    return t.source + ":" + std::to_string(r < t.row_lines.size() ? t.row_lines[r] : int(r) + 2) + ": ";
  };
  auto where = [&](size_t r, const std::string& col, const std::string& v) {
    return line(r) + "column '" + col + "': value '" + v + "'";
  };
  // A cell with a fixed set of names, read by `parse` (which throws UsageError listing them).
  auto check_name = [&](size_t r, const char* col, auto parse) {
    const std::string& v = t.field(r, col);
    if (v.empty() || v == "unknown") return;
    try {
      parse(v);
    } catch (const UsageError& e) {
      throw Error(where(r, col, v) + ": " + e.what());
    }
  };
  for (size_t r = 0; r < t.rows.size(); ++r) {
    for (const char* col : kCountColumns) {
      const std::string& v = t.field(r, col);
      if (v.empty() || v == "unknown") continue;
      const auto x = number(v);
      if (!x || !std::isfinite(*x) || *x < 0 || *x != std::floor(*x) || *x > 1e15)
        throw Error(where(r, col, v) + " is not a count (a non-negative integer, empty or 'unknown')");
      // Sizes and degrees are at least 1 where stated (0 is allowed for sp, zero and the MoE
      // fields, where it means off or dense).
      const std::string c = col;
      const bool may_be_zero = c == "sp" || c == "zero" || c == "experts" || c == "topk" || c == "moe_ffn" || c == "ffn";
      if (*x < 1 && !may_be_zero) throw Error(where(r, col, v) + " must be at least 1 (or empty / 'unknown')");
      if (*x > 1e9 && c != "vocab") throw Error(where(r, col, v) + " is out of range (at most 1e9)");
      if (c == "sp" && *x > 1) throw Error(where(r, col, v) + " is not 0, 1 or empty");
      if (c == "zero" && *x > 3) throw Error(where(r, col, v) + " is not a ZeRO stage (0-3, empty or 'unknown')");
    }
    for (const std::string& col : validation_metrics()) {
      const std::string& v = t.field(r, col);
      if (v.empty()) continue;
      const auto x = number(v);
      if (!x || !std::isfinite(*x) || *x <= 0)
        throw Error(where(r, col, v) + " is not a measured value (a finite positive number, or empty)");
    }
    check_name(r, "recompute", &parse_recompute);
    check_name(r, "dtype", &parse_dtype);
    // The run-fact columns (framework ... compile): a cell they cannot read is the file's error,
    // not a row to skip. Their messages name the column and value already.
    try {
      const RunFacts facts = row_facts(t, r);
      // Under framework 'other' the PyTorch-only columns price PyTorch FSDP, that is zero 3.
      const bool other_not_fsdp = facts.codebase == "other" && !priced_as_pytorch_fsdp(facts, t.field(r, "zero") == "3" ? 3 : 0);
      auto pytorch_fsdp_only = [&](const std::string& col, bool set) {
        if (set && other_not_fsdp)
          throw Error("column '" + col + "': value '" + t.field(r, col) + "' with framework 'other' (or empty) and zero '" +
                      t.field(r, "zero") + "': under framework 'other' it is priced for PyTorch FSDP (zero 3) only "
                      "(0 or empty otherwise)");
      };
      pytorch_fsdp_only("compile", facts.compile.value_or(false));
      pytorch_fsdp_only("fsdp_float8_all_gather", facts.fsdp_float8_all_gather.value_or(false));
      pytorch_fsdp_only("float8_recipe", facts.float8_recipe.has_value());
      if (facts.fsdp_float8_all_gather.value_or(false) && t.field(r, "dtype") != "fp8")
        throw Error("column 'fsdp_float8_all_gather': value '1' with dtype '" + t.field(r, "dtype") +
                    "': the float8 all-gather gathers fp8 training's weights (0 or empty otherwise)");
      if (facts.float8_recipe && t.field(r, "dtype") != "fp8")
        throw Error("column 'float8_recipe': value '" + t.field(r, "float8_recipe") + "' with dtype '" +
                    t.field(r, "dtype") + "': a float8 recipe is fp8 training's (empty otherwise)");
      if (facts.float8_recipe.value_or(Float8Recipe::Tensorwise) != Float8Recipe::Tensorwise &&
          facts.fsdp_float8_all_gather.value_or(false))
        throw Error("column 'float8_recipe': value '" + t.field(r, "float8_recipe") +
                    "' with fsdp_float8_all_gather 1: torchtitan runs the float8 all-gather with the tensorwise "
                    "recipe only");
    } catch (const Error& e) {
      throw Error(line(r) + e.what());
    }
  }
}

long as_int(const CsvTable& t, size_t row, const std::string& col, long fallback) {
  auto v = number(t.field(row, col));
  return v ? long(*v) : fallback;
}

bool stated(const CsvTable& t, size_t row, const std::string& col) { return number(t.field(row, col)).has_value(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * double(i + j);  // ties share the mean rank
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2) return 1;
  const auto ra = ranks(a), rb = ranks(b);
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / ra.size();
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / rb.size();
  double num = 0, da = 0, db = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    num += (ra[i] - ma) * (rb[i] - mb);
    da += (ra[i] - ma) * (ra[i] - ma);
    db += (rb[i] - mb) * (rb[i] - mb);
  }
  return da > 0 && db > 0 ? num / std::sqrt(da * db) : 1;
}

// The built-in model with the row's layers, hidden size, heads, vocabulary, FFN and experts, if any.
const ModelSpec* zoo_model_like(const ModelSpec& m, bool kv_heads_stated) {
  static const std::vector<ModelSpec> zoo = [] {
    std::vector<ModelSpec> out;
    for (const auto& name : builtin_model_names()) out.push_back(load_model(name));
    return out;
  }();
  for (const ModelSpec& z : zoo) {
    if (z.layers != m.layers || z.hidden != m.hidden || z.heads != m.heads || z.vocab != m.vocab) continue;
    if (kv_heads_stated && z.kv_heads != m.kv_heads) continue;
    if (z.moe.num_experts != m.moe.num_experts) continue;
    if (m.moe.enabled() ? (z.moe.top_k != m.moe.top_k || z.moe.expert_ffn != m.moe.expert_ffn) : z.ffn != m.ffn) continue;
    return &z;
  }
  return nullptr;
}

}  // namespace

std::optional<double> mean_abs_throughput_error_pct(const std::map<std::string, double>& error_pct) {
  double sum = 0;
  int n = 0;
  for (const std::string& metric : throughput_metrics())
    if (auto it = error_pct.find(metric); it != error_pct.end()) sum += std::fabs(it->second), ++n;
  if (n == 0) return std::nullopt;
  return sum / n;
}

Seconds null_model_step_time(const Scenario& s) {
  // The 16-bit peak for fp8 runs too: MFU is stated against it by the sources (torchtitan's
  // get_peak_flops, Megatron-Bridge's tables), and a null at twice the peak would be a straw man.
  const StepFlops f = step_flops(s.model, s.work, s.layout);
  const Dtype peak_dtype = s.work.dtype == Dtype::FP8 ? Dtype::BF16 : s.work.dtype;
  return f.model / (double(s.layout.gpus()) * s.hardware.peak(peak_dtype) * 0.5);
}

std::string source_of_row(const CsvTable& t, size_t r) {
  const std::string& src = t.field(r, "source");
  const size_t at = src.find(" \xc2\xb7 ");
  std::string out = at == std::string::npos ? src : src.substr(0, at);
  // A row number is not part of the source ("vTrain (MICRO'24) data/ground_truth_single.csv row 7").
  const size_t row_at = out.rfind(" row ");
  if (row_at != std::string::npos && row_at + 5 < out.size() &&
      std::all_of(out.begin() + row_at + 5, out.end(), [](char c) { return std::isdigit((unsigned char)c); }))
    out.resize(row_at);
  return out;
}

// Megatron runs a virtual pipeline whose stages do not divide the layers only with the embedding
// and the loss taking a layer's place (--account-for-embedding/loss-in-pipeline-split; NeMo's
// Llama 3.1 405B and Qwen3-235B recipes; Llama 3's own pipeline, which "reduces one Transformer
// layer each from the first and the last stages", arXiv 2407.21783 3.3.2): the only reading of
// such a layout, stated or filled. Where that does not divide either, Megatron needs a custom
// layout (--pipeline-model-parallel-layout): the one its DeepSeek-V3 recipes write, every virtual
// stage in order taking ceil(layers / stages) (front_loaded_pipeline_layout).
void split_pipeline_like_megatron(Layout& l, const ModelSpec& m, Framework framework) {
  if (framework != Framework::Megatron || l.vpp <= 1 || m.layers % (l.pp * l.vpp) == 0) return;
  l.embedding_in_pipeline_split = l.loss_in_pipeline_split = (m.layers + 2) % (l.pp * l.vpp) == 0;
  if (!l.accounts_pipeline_split()) l.pipeline_layout = front_loaded_pipeline_layout(m.layers, l.pp * l.vpp);
}

std::optional<double> cell_number(const CsvTable& t, size_t row, const std::string& col) { return number(t.field(row, col)); }

Scenario scenario_from_row(const CsvTable& t, size_t r, const HardwareLookup& lookup, RunSettings& settings) {
  Scenario s;
  s.name = t.field(r, "id");
  ModelSpec& m = s.model;
  m.name = "row " + s.name;
  m.layers = int(as_int(t, r, "layers", 0));
  m.hidden = as_int(t, r, "hidden", 0);
  m.ffn = as_int(t, r, "ffn", 0);
  m.heads = int(as_int(t, r, "heads", 0));
  m.kv_heads = int(as_int(t, r, "kv_heads", m.heads));
  m.vocab = as_int(t, r, "vocab", 0);
  if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0) throw Error("architecture not stated");
  // A dense row without its FFN size: the GPT default a user would assume, 4 x hidden.
  if (m.ffn <= 0 && number(t.field(r, "experts")).value_or(0) <= 0) m.ffn = 4 * m.hidden;
  if (t.field(r, "dp").empty() && t.field(r, "tp").empty() && t.field(r, "pp").empty())
    throw Error("layout not stated (dp, tp, pp)");
  // The columns carry no head width: hidden / heads, which a whole number of heads must give.
  if (m.hidden % m.heads != 0)
    throw Error("hidden " + std::to_string(m.hidden) + " is not a multiple of heads " + std::to_string(m.heads) +
                " (the head width is hidden / heads)");
  m.head_dim = int(m.hidden / m.heads);
  const long seq = as_int(t, r, "seq", 0);
  if (seq <= 0) throw Error("seq not stated");
  m.max_seq = int(seq);
  const bool gpt_style = m.ffn == 4 * m.hidden && m.kv_heads == m.heads;
  if (gpt_style) {
    m.norm = NormKind::LayerNorm;
    m.activation = Activation::GELU;
    m.learned_positions = true;
    m.rotary_fraction = 0;
    m.tied_embeddings = true;
    m.linear_bias = true;
    m.dropout = true;
  } else {
    m.norm = NormKind::RMSNorm;
    m.activation = Activation::SwiGLU;
  }
  if (auto e = number(t.field(r, "experts")); e && *e > 0) {
    m.moe.num_experts = int(*e);
    m.moe.top_k = int(as_int(t, r, "topk", 2));
    m.moe.expert_ffn = as_int(t, r, "moe_ffn", m.ffn);
    if (m.ffn <= 0) m.ffn = m.moe.expert_ffn;
  }
  validate_model(m, t.source + " row " + s.name);
  // A row that states the shape of a built-in model gets that model's whole architecture (MLA,
  // dense first layers, shared experts, QK norm...), which the columns cannot carry: a user who
  // recognises DeepSeek-V3 or Llama 3 in a table describes it that way.
  if (const ModelSpec* known = zoo_model_like(m, !t.field(r, "kv_heads").empty())) {
    const int max_seq = m.max_seq;
    m = *known;
    m.max_seq = max_seq;
  }

  s.hardware_name = t.field(r, "gpu");
  try {
    s.hardware = lookup ? lookup(s.hardware_name) : load_hardware(s.hardware_name);
  } catch (const UsageError&) {
    throw Error("no hardware profile '" + s.hardware_name + "'");
  }
  s.hardware.gpus_per_node = int(as_int(t, r, "gpus_per_node", s.hardware.gpus_per_node));
  s.gpus = int(as_int(t, r, "gpus", 0));
  Layout& l = s.layout;
  l.tp = int(as_int(t, r, "tp", 1));
  l.pp = int(as_int(t, r, "pp", 1));
  l.cp = int(as_int(t, r, "cp", 1));
  l.ep = std::max(1, int(as_int(t, r, "ep", 1)));
  if (!stated(t, r, "dp")) {
    try {
      l.dp = dp_for_gpus(l, s.gpus);
    } catch (const LayoutError& e) {
      throw Error("dp not stated and " + e.detail());
    }
  } else {
    l.dp = int(as_int(t, r, "dp", 1));
  }
  l.vpp = int(as_int(t, r, "vpp", 1));
  if (l.vpp > 1) l.schedule = Schedule::Interleaved;
  l.sp = as_int(t, r, "sp", 0) == 1;
  l.zero = int(as_int(t, r, "zero", 0));
  // Hybrid sharding (the project's `dp_shard` column): unstated, a ZeRO shard spans all of dp.
  l.dp_shard = int(as_int(t, r, "dp_shard", 0));
  l.micro_batch = as_int(t, r, "micro_batch", 0);
  // The run's facts from its columns (framework, framework_date, attention, dp_overlap,
  // tp_overlap), unstated ones filled with the codebase's default at its date (run_facts.cpp).
  const RunFacts facts = row_facts(t, r);
  settings = run_settings(facts, l.pp, l.zero);
  s.work.framework = settings.framework;
  s.work.flash_attention = settings.flash_attention;
  s.work.attention_kernel = settings.attention_kernel;
  s.work.cross_entropy = settings.cross_entropy;
  s.work.train_metric_passes = settings.train_metric_passes;
  s.work.overlap_p2p_comm = settings.overlap_p2p_comm;
  s.work.bf16_optimizer = settings.bf16_optimizer;
  s.work.pipeline_bf16_stage0_only = settings.pipeline_bf16_stage0_only;
  s.work.pp_keeps_stage_outputs = settings.pp_keeps_stage_outputs;
  s.work.overlap_moe_ep_comm = settings.overlap_moe_ep_comm;
  s.work.deepep_dispatch = settings.deepep_dispatch && m.moe.enabled();
  s.work.bf16_adam_moments = settings.bf16_adam_moments;
  s.work.grad_reduce_in_bf16 = settings.grad_reduce_in_bf16;
  s.work.fsdp1 = settings.fsdp1;
  s.work.compile = settings.compile;
  s.work.fsdp_float8_all_gather = settings.fsdp_float8_all_gather;
  if (!settings.dp_overlap) l.dp_overlap = DpOverlap::None;
  // TP communication overlap (Megatron's --tp-comm-overlap, which needs sequence parallelism;
  // torchtitan's Async TP, which runs on its sequence-parallel plan).
  if (l.tp > 1 && settings.tp_overlap) {
    l.tp_overlap = true;
    l.sp = true;
  }
  if (l.tp > 1 && settings.tp_always_sequence_parallel) l.sp = true;
  split_pipeline_like_megatron(l, m, s.work.framework);
  // Expert tensor parallelism (the project's `etp` column). Unstated, Megatron-Core shards each
  // expert over the TP group: Megatron-LM's arguments.py sets expert_tensor_parallel_size to
  // tensor_model_parallel_size when not given, as parallel_state.initialize_model_parallel does for
  // NeMo (and before that flag, Megatron-Core sharded experts over TP like the dense layers).
  // Other codebases: 1.
  if (stated(t, r, "etp")) l.etp = std::max(1, int(as_int(t, r, "etp", 1)));
  else if (s.work.framework == Framework::Megatron && m.moe.enabled() && l.ep > 1) l.etp = l.tp;
  s.work.seq = seq;
  s.work.global_batch = as_int(t, r, "global_batch", 0);
  const std::string dtype = t.field(r, "dtype");
  s.work.dtype = dtype.empty() || dtype == "unknown" ? Dtype::BF16 : parse_dtype(dtype);
  s.work.float8_recipe = s.work.dtype == Dtype::FP8 ? settings.float8_recipe : Float8Recipe::Tensorwise;
  // The codebase's fp8 SwiGLU input store applies to its fp8 runs with a SwiGLU MLP.
  s.work.fp8_activation_input_store =
      settings.fp8_swiglu_input && s.work.dtype == Dtype::FP8 && m.activation == Activation::SwiGLU;
  // torchtitan accumulates no gradients unless told to: its global batch is dp x the local batch.
  if (s.work.global_batch <= 0 && settings.local_batch_semantics && l.micro_batch > 0)
    s.work.global_batch = Count(l.dp) * l.micro_batch;
  if (s.gpus <= 0 || s.work.global_batch <= 0) throw Error("gpus or global batch not stated");
  return s;
}

const std::vector<std::string>& project_added_columns() {
  static const std::vector<std::string> c = {"compile", "ep_dispatcher", "fsdp_float8_all_gather", "float8_recipe",
                                             "etp", "grad_reduce_dtype", "dp_shard", "ep_overlap"};
  return c;
}

CsvTable shared_columns_only(CsvTable t) {
  const auto& added = project_added_columns();
  for (std::string& name : t.header)
    if (std::find(added.begin(), added.end(), name) != added.end()) name.clear();  // CsvTable::column: absent
  if (const int a = t.column("attention"); a >= 0)
    for (auto& row : t.rows) {
      if (size_t(a) >= row.size()) continue;
      try {
        parse_attention_kernel(row[size_t(a)]);  // a kernel's name: the project's finer value
        row[size_t(a)] = "flash";
      } catch (const UsageError&) {
      }
    }
  return t;
}

ValidationReport validate_runs(const CsvTable& t, const ValidationOptions& opt) {
  check_cells(t);
  ValidationReport rep;
  rep.source = t.source;
  const Predictor price = opt.predictor ? opt.predictor : Predictor([](const Scenario& s) {
    return predict(s.model, s.hardware, s.work, s.layout);
  });
  std::map<std::string, HardwareProfile> profiles;
  const HardwareLookup lookup = [&](const std::string& name) {
    auto it = profiles.find(name);
    if (it == profiles.end()) {
      HardwareProfile hw = load_hardware(name);
      if (opt.adjust_hardware) opt.adjust_hardware(hw);
      it = profiles.emplace(name, std::move(hw)).first;
    }
    return it->second;
  };
  if (opt.progress) opt.progress->set_total(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (opt.progress) opt.progress->advance();
    RowResult row;
    row.id = t.field(r, "id");
    row.codebase = t.field(r, "framework");
    if (opt.include && !opt.include(r, row.id)) continue;
    try {
      RunSettings run;
      Scenario s = scenario_from_row(t, r, lookup, run);
      const RowFill fill = fill_unstated_choices(t, r, s, run, price);
      row.filled = fill.filled;
      if (s.model.name.rfind("row ", 0) != 0) row.filled.push_back("model=" + s.model.name);
      // A codebase the row does not name, sharding parameters: priced as PyTorch FSDP (run_facts.cpp).
      if (run.pytorch_fsdp) row.filled.push_back("framework=pytorch-fsdp");
      if (!number(t.field(r, "global_batch"))) row.filled.push_back("global_batch=" + std::to_string(s.work.global_batch));
      const Layout& best_layout = fill.layout;
      s.layout = best_layout;
      s.work.compile = fill.compile;
      s.work.cross_entropy = fill.compile ? run.compiled_cross_entropy : run.cross_entropy;
      row.scenario = s;
      row.predicted_to_fit = fill.fits;
      row.memory_fit = memory_fit(fill.prediction, s.hardware);
      Prediction p = fill.prediction;
      if (opt.null_model) {
        p.step_time = null_model_step_time(s);
        set_throughput(p, s.model, s.hardware, s.work, best_layout);
      }
      // Model FLOPs in the source's own count (run_facts.cpp: Megatron-LM since 2025 and
      // Megatron-Bridge count causal attention at half).
      double model_flops_scale = 1;
      if (run.model_flops_causal_halved) {
        const StepFlops f = step_flops(s.model, s.work, best_layout);
        model_flops_scale = f.causal_model / f.model;
        row.filled.push_back("model_flops=causal-halved");
      }
      const std::map<std::string, double> predicted = {{"iter_s", p.step_time},
                                                       {"tflops_hw", p.tflops_hw_per_gpu},
                                                       {"tflops_model", p.tflops_model_per_gpu * model_flops_scale},
                                                       {"mfu_pct", 100 * p.mfu * model_flops_scale},
                                                       {"tokens_per_gpu_s", p.tokens_per_s_per_gpu},
                                                       // the peak as the framework logs it (memory_model.hpp)
                                                       {"peak_mem_gib", reported_peak_memory(p.stage_memory, s.work.framework) / kGiB}};
      for (const auto& metric : validation_metrics()) {
        auto v = number(t.field(r, metric));
        if (!v || *v <= 0) continue;
        row.measured[metric] = *v;
        row.predicted[metric] = predicted.at(metric);
        row.error_pct[metric] = 100.0 * (predicted.at(metric) - *v) / *v;
      }
      row.scored = !row.measured.empty();
      if (!row.scored) row.skip_reason = "no measured metric";
      if (!opt.null_model)
        if (auto band = expected_error(builtin_residual_runs(), s.work.framework, s.hardware.name, s.gpus, row.codebase))
          row.expected_error_pct = band->pct;
    } catch (const Error& e) {
      row.skip_reason = e.what();
    }
    if (row.scored) {
      ++rep.rows_scored;
      for (const auto& f : row.filled) ++rep.filled_counts[f.substr(0, f.find('='))];
    } else {
      ++rep.rows_skipped;
      ++rep.skip_reasons[row.skip_reason];
    }
    rep.rows.push_back(std::move(row));
  }
  for (const auto& metric : validation_metrics()) {
    MetricSummary ms;
    std::vector<double> errs;
    for (const auto& row : rep.rows) {
      auto it = row.error_pct.find(metric);
      if (it == row.error_pct.end()) continue;
      const double e = std::fabs(it->second);
      errs.push_back(e);
      if (e >= ms.worst_pct) {
        ms.worst_pct = e;
        ms.worst_id = row.id;
      }
    }
    if (errs.empty()) continue;
    ms.n = int(errs.size());
    ms.mape_pct = std::accumulate(errs.begin(), errs.end(), 0.0) / errs.size();
    ms.median_pct = median(errs);
    rep.metrics[metric] = ms;
  }
  if (opt.rank) {
    // Groups: the same model, GPU count and global batch; only the layout differs.
    std::map<std::string, std::vector<const RowResult*>> groups;
    for (const auto& row : rep.rows) {
      if (!row.scored || !row.measured.count("iter_s")) continue;
      const auto& s = row.scenario;
      const std::string key = std::to_string(s.model.layers) + "x" + std::to_string(s.model.hidden) + " seq " +
                              std::to_string(s.work.seq) + " gpus " + std::to_string(s.gpus) + " batch " +
                              std::to_string(s.work.global_batch);
      groups[key].push_back(&row);
    }
    for (const auto& [key, rows] : groups) {
      if (rows.size() < 2) continue;
      RankGroup g;
      g.key = key;
      g.layouts = int(rows.size());
      std::vector<double> measured, predicted;
      const RowResult* pick = rows.front();
      double best_measured = rows.front()->measured.at("iter_s");
      for (const RowResult* row : rows) {
        measured.push_back(row->measured.at("iter_s"));
        predicted.push_back(row->predicted.at("iter_s"));
        best_measured = std::min(best_measured, row->measured.at("iter_s"));
        if (row->predicted.at("iter_s") < pick->predicted.at("iter_s")) pick = row;
      }
      g.regret_pct = 100.0 * (pick->measured.at("iter_s") / best_measured - 1.0);
      g.spearman = spearman(measured, predicted);
      rep.groups.push_back(g);
    }
  }
  return rep;
}

}  // namespace sixfold
