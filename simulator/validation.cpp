#include "simulator/validation.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include "common/error.hpp"
#include "models/model_zoo.hpp"

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

long as_int(const CsvTable& t, size_t row, const std::string& col, long fallback) {
  auto v = number(t.field(row, col));
  return v ? long(*v) : fallback;
}

// The candidates a user would try for an unstated field, cheapest (fastest) first.
const Recompute kRecomputeOrder[] = {Recompute::None, Recompute::Selective, Recompute::SelectiveOp, Recompute::Full};

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

// Megatron-Core recompute modules a row's notes name in their recompute field ("recompute=
// selective (mla_up_proj, mlp)") or describe ("RMSNorm + MLA up-projection recompute"); those
// the row's model lacks (the CSV cannot describe MLA or shared experts) are dropped.
unsigned recompute_modules_in_notes(const std::string& notes, const ModelSpec& m) {
  namespace rm = recompute_module;
  const size_t at = notes.find("recompute=selective");
  if (at == std::string::npos) return 0;
  // The recompute field only: up to the next field (';') or section ('|').
  const std::string said = notes.substr(at, std::min(notes.find('|', at), notes.find(';', at)) - at);
  auto word_at = [&](size_t p, size_t n) {
    auto inside = [&](size_t i) { return std::isalnum((unsigned char)said[i]) || said[i] == '_'; };
    return (p == 0 || !inside(p - 1)) && (p + n >= said.size() || !inside(p + n));
  };
  unsigned modules = 0;
  for (const char* name : {"core_attn", "mlp", "layernorm", "mla_up_proj", "moe", "moe_act", "shared_experts"}) {
    const size_t n = std::string(name).size();
    for (size_t p = said.find(name); p != std::string::npos; p = said.find(name, p + 1))
      if (word_at(p, n)) modules |= parse_recompute_modules(name);
  }
  if (said.find("RMSNorm") != std::string::npos || said.find("LayerNorm") != std::string::npos) modules |= rm::kLayernorm;
  if (said.find("MLA up-projection") != std::string::npos) modules |= rm::kMlaUpProj;
  if (!m.mla.enabled) modules &= ~rm::kMlaUpProj;
  if (!m.moe.enabled()) modules &= ~(rm::kMoe | rm::kMoeAct);
  if (m.moe.shared_experts == 0) modules &= ~rm::kSharedExperts;
  return modules;
}

}  // namespace

Scenario scenario_from_row(const CsvTable& t, size_t r, const HardwareLookup& lookup) {
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
  l.dp = int(as_int(t, r, "dp", s.gpus / std::max(1, l.tp * l.pp * l.cp)));
  l.vpp = int(as_int(t, r, "vpp", 1));
  if (l.vpp > 1) l.schedule = Schedule::Interleaved;
  l.sp = as_int(t, r, "sp", 0) == 1;
  l.zero = int(as_int(t, r, "zero", 0));
  l.micro_batch = as_int(t, r, "micro_batch", 0);
  // The framework a row ran, read from its source and notes the way a user would know it: the
  // cost model follows its loss, ZeRO-3 gathers and parameter-gather overlap (framework_traits).
  const std::string text = t.field(r, "source") + " " + t.field(r, "notes");
  const auto says = [&](const char* word) { return text.find(word) != std::string::npos; };
  if (says("torchtitan")) s.work.framework = Framework::Torchtitan;
  // DeepSpeed releases of 2021's first half, before its ZeRO-3 gathers stopped synchronising.
  else if (says("DeepSpeed")) s.work.framework = says(" 2021") ? Framework::DeepSpeedLegacy : Framework::DeepSpeed;
  // The DeepSpeed engine without ZeRO reduces gradients after the backward (no overlap), which is
  // how Megatron-DeepSpeed runs (vTrain's data); other frameworks overlap in buckets.
  // torchtitan builds two stages per rank for an interleaved schedule unless split points are
  // given (pipelining_utils.generate_split_points: num_stages_per_rank = 2 for
  // PipelineScheduleMulti); rows name the schedule but not V.
  if (s.work.framework == Framework::Torchtitan && l.pp > 1 && l.vpp <= 1 && says("Interleaved 1F1B")) {
    l.vpp = 2;
    l.schedule = Schedule::Interleaved;
  }
  // Megatron runs a virtual pipeline whose stages do not divide the layers only with the embedding
  // and the loss taking a layer's place (--account-for-embedding/loss-in-pipeline-split; NeMo's
  // Llama 3.1 405B and Qwen3-235B recipes): the only reading of such a row.
  if (s.work.framework == Framework::Megatron && l.vpp > 1 && m.layers % (l.pp * l.vpp) != 0 &&
      (m.layers + 2) % (l.pp * l.vpp) == 0)
    l.embedding_in_pipeline_split = l.loss_in_pipeline_split = true;
  const bool megatron_deepspeed = says("Megatron-DeepSpeed");
  if (megatron_deepspeed && l.zero == 0) l.dp_overlap = DpOverlap::None;
  // TP communication overlap as the sources word it: Megatron's "TP-comm overlap" (which needs
  // sequence parallelism) and torchtitan's Async TP.
  if (l.tp > 1 && (says("TP-comm overlap on") || says("DP/TP/PP-comm overlap on") || says("Async TP"))) {
    l.tp_overlap = true;
    l.sp = true;
  }
  s.work.seq = seq;
  s.work.global_batch = as_int(t, r, "global_batch", 0);
  const std::string dtype = t.field(r, "dtype");
  s.work.dtype = dtype.empty() ? Dtype::BF16 : parse_dtype(dtype);
  // Megatron-DeepSpeed's GPT runs unfused attention (scores, fused softmax, dropout, values)
  // unless --use-flash-attn is given; vTrain's runs predate it.
  if (megatron_deepspeed) s.work.flash_attention = false;
  // torchtitan accumulates no gradients unless told to: its global batch is dp x the local batch.
  if (s.work.global_batch <= 0 && s.work.framework == Framework::Torchtitan && l.micro_batch > 0)
    s.work.global_batch = Count(l.dp) * l.micro_batch;
  if (s.gpus <= 0 || s.work.global_batch <= 0) throw Error("gpus or global batch not stated");
  return s;
}

ValidationReport validate_runs(const CsvTable& t, const ValidationOptions& opt) {
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
  for (size_t r = 0; r < t.rows.size(); ++r) {
    RowResult row;
    row.id = t.field(r, "id");
    if (opt.include && !opt.include(r, row.id)) continue;
    try {
      Scenario s = scenario_from_row(t, r, lookup);
      const std::string rc = t.field(r, "recompute");
      std::vector<Recompute> recomputes;
      const bool torchtitan = s.work.framework == Framework::Torchtitan;
      if (rc.empty() || rc == "unknown") {
        // Only torchtitan has op-level selective checkpointing; Megatron and DeepSpeed offer the rest.
        for (Recompute c : kRecomputeOrder)
          if (c != Recompute::SelectiveOp || torchtitan) recomputes.push_back(c);
      } else {
        recomputes.push_back(parse_recompute(rc));
      }
      // torchtitan's "selective" activation checkpointing is op-level (its default "op" option).
      if (rc == "selective" && torchtitan) recomputes = {Recompute::SelectiveOp};
      // Megatron-Core's recompute modules where the notes name them.
      if (rc == "selective" && !torchtitan) s.layout.recompute_modules = recompute_modules_in_notes(t.field(r, "notes"), s.model);
      // torchtitan's pipeline splits each rank's local batch into as many micro-batches as there
      // are stages unless told otherwise (pipeline_parallel_microbatches unset); the rows state
      // the local batch.
      bool split_local_batch = false;
      if (torchtitan && s.layout.pp > 1 && s.layout.micro_batch > 0 && s.layout.micro_batch % s.layout.pp == 0) {
        s.layout.micro_batch /= s.layout.pp;
        split_local_batch = true;
      }
      std::vector<Count> micro_batches;
      if (s.layout.micro_batch > 0) micro_batches.push_back(s.layout.micro_batch);
      else
        for (Count b = 1; b <= s.work.global_batch / s.layout.dp; b *= 2)
          if (s.work.global_batch % (s.layout.dp * b) == 0) micro_batches.push_back(b);
      // Fill unstated fields the way a user would: the fastest micro-batch, and the cheapest
      // recompute, that fit in memory; if nothing fits, the least memory.
      std::optional<Prediction> best;
      Layout best_layout;
      bool best_fits = false;
      std::string last_error;
      for (Recompute rcv : recomputes) {
        for (Count b : micro_batches) {
          Layout l = s.layout;
          l.recompute = rcv;
          l.micro_batch = b;
          try {
            validate_layout(s.model, l, s.work, s.gpus);
          } catch (const LayoutError& e) {
            last_error = e.constraint();
            continue;
          }
          Scenario trial = s;
          trial.layout = l;
          Prediction p = price(trial);
          const bool fits = p.peak_memory <= s.hardware.memory_capacity;
          const bool better = !best || (fits && !best_fits) ||
                              (fits == best_fits && (fits ? p.step_time < best->step_time : p.peak_memory < best->peak_memory));
          if (better) {
            best = p;
            best_layout = l;
            best_fits = fits;
          }
        }
        if (best_fits) break;  // the cheapest recompute that fits
      }
      if (micro_batches.empty()) last_error = "global batch divisible by dp*micro-batch";
      if (!best) throw Error("layout invalid: " + last_error);
      if (recomputes.size() > 1) row.filled.push_back("recompute=" + to_string(best_layout.recompute));
      if (micro_batches.size() > 1 || s.layout.micro_batch <= 0) row.filled.push_back("micro_batch=" + std::to_string(best_layout.micro_batch));
      if (best_layout.dp_overlap == DpOverlap::None) row.filled.push_back("dp_overlap=none (Megatron-DeepSpeed)");
      if (split_local_batch) row.filled.push_back("pipeline_micro_batches=" + std::to_string(best_layout.pp));
      if (best_layout.accounts_pipeline_split()) row.filled.push_back("pipeline_split=embedding,loss");
      if (best_layout.vpp > 1 && !(number(t.field(r, "vpp")).value_or(1) > 1))
        row.filled.push_back("vpp=" + std::to_string(best_layout.vpp));
      if (s.model.name.rfind("row ", 0) != 0) row.filled.push_back("model=" + s.model.name);
      if (!number(t.field(r, "global_batch"))) row.filled.push_back("global_batch=" + std::to_string(s.work.global_batch));
      if (best_layout.tp_overlap) row.filled.push_back("tp_overlap=on");
      if (s.work.framework != Framework::Megatron) row.filled.push_back("framework=" + to_string(s.work.framework));
      s.layout = best_layout;
      row.scenario = s;
      row.predicted_to_fit = best_fits;
      const Prediction& p = *best;
      // Model FLOPs in the source's own count: Megatron-Bridge's performance tables and Megatron-LM
      // since 2025 count causal attention at half (causal_self_attn; training.py's "seq_length / 2
      // # causal mask"), which their TFLOP/s over tokens/s shows per token (L8, L9); Megatron-LM of
      // 2024 and earlier, NeMo 1 and the papers count it whole (M1, M5, M6 match that).
      double model_flops_scale = 1;
      const std::string src = t.field(r, "source");
      const bool new_megatron = src.find("Megatron-LM") != std::string::npos &&
                                (src.find("2025") != std::string::npos || src.find("2026") != std::string::npos);
      if (src.find("Megatron-Bridge") != std::string::npos || new_megatron) {
        const StepFlops f = step_flops(s.model, s.work, best_layout.recompute);
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
