#include "simulator/fit/row_fill.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "simulator/fit/validation.hpp"

namespace sixfold {

namespace {

const Recompute kRecomputeOrder[] = {Recompute::None, Recompute::Selective, Recompute::SelectiveOp, Recompute::Full};

// One combination of the unstated choices, in the order it is priced.
struct Trial {
  bool compile = false;
  Layout layout;
  const char* invalid = nullptr;  // why the framework would refuse it, before any pricing
};

// Every trial of `trials` once for each value, the earlier choices outermost (the order decides a
// tie: the first trial of equal time is kept, so cheaper values come first).
template <class T, class Set>
std::vector<Trial> expand(const std::vector<Trial>& trials, const std::vector<T>& values, Set set) {
  std::vector<Trial> out;
  out.reserve(trials.size() * values.size());
  for (const Trial& t : trials)
    for (const T& v : values) {
      out.push_back(t);
      set(out.back(), v);
    }
  return out;
}

}  // namespace

RowFill fill_unstated_choices(const CsvTable& t, size_t r, const Scenario& row, const RunSettings& run,
                              const std::function<Prediction(const Scenario&)>& price) {
  auto stated = [&](const char* column) { return cell_number(t, r, column).has_value(); };
  const ModelSpec& model = row.model;

  // Recompute policies, cheapest first: the stated one, or every one the framework has.
  // Megatron's "selective" re-runs core attention by default and more modules when asked
  // (--recompute-modules); which ones a row used is not a column, so, as for an unstated policy,
  // the one whose layout is fastest in memory.
  const std::string rc = t.field(r, "recompute");
  const bool unstated_recompute = rc.empty() || rc == "unknown";
  std::vector<std::pair<Recompute, unsigned>> policies;
  auto add_policy = [&](Recompute p) {
    if (p == Recompute::Selective)
      for (unsigned modules : selective_module_ladder(model)) policies.push_back({p, modules});
    else
      policies.push_back({p, 0});
  };
  if (unstated_recompute) {
    for (Recompute c : kRecomputeOrder) {
      const bool selective = c == Recompute::Selective || c == Recompute::SelectiveOp;
      if (!selective || (run.has_selective_recompute && (c == Recompute::SelectiveOp) == run.selective_is_op_level))
        add_policy(c);
    }
  } else {
    const Recompute stated_policy = parse_recompute(rc);
    add_policy(stated_policy == Recompute::Selective && run.selective_is_op_level ? Recompute::SelectiveOp
                                                                                  : stated_policy);
  }

  // torchtitan's pipeline splits each rank's local batch into micro-batches itself, unless told
  // otherwise, by its date (run_facts.cpp): pp of them (torchtitan 9dec370, 2024-12), one per
  // stage in all (pp x the stages each rank holds, from 2025-01), or of one sequence each (from
  // 2025-04); it refuses a local batch it cannot split. The rows state the local batch, or
  // nothing (global batch / dp); under the per-stage rule the micro-batch follows the virtual
  // stages tried below.
  using PMB = RunSettings::PipelineMicroBatches;
  auto pipeline_micro_batch_count = [&](Count local_batch, int vpp) -> Count {
    switch (run.pipeline_micro_batches) {
      case PMB::PerPipelineRank: return row.layout.pp;
      case PMB::PerStage: return Count(row.layout.pp) * vpp;
      case PMB::PerSequence: return local_batch;
    }
    return row.layout.pp;
  };
  Count pipeline_local_batch = 0;
  if (run.local_batch_semantics && row.layout.pp > 1) {
    const Count local = row.layout.micro_batch > 0 ? row.layout.micro_batch : row.work.global_batch / row.layout.dp;
    const bool whole = row.layout.micro_batch > 0 || row.work.global_batch % row.layout.dp == 0;
    if (whole && local > 0 && local % pipeline_micro_batch_count(local, 1) == 0) pipeline_local_batch = local;
  }
  const bool split_local_batch = pipeline_local_batch > 0;
  std::vector<Count> micro_batches;
  if (split_local_batch)
    micro_batches.push_back(pipeline_local_batch);  // divided by the stages in all, per vpp tried
  else if (row.layout.micro_batch > 0)
    micro_batches.push_back(row.layout.micro_batch);
  else
    for (Count b = 1; b <= row.work.global_batch / row.layout.dp; b *= 2)
      if (row.work.global_batch % (row.layout.dp * b) == 0) micro_batches.push_back(b);

  // An unstated ZeRO stage: those the framework has (Megatron: DDP or the distributed optimizer;
  // torchtitan: DDP or FSDP; DeepSpeed: 0-3).
  std::vector<int> zeros = {row.layout.zero};
  const bool zero_filled = !stated("zero");
  if (zero_filled) {
    if (row.work.framework == Framework::Megatron) zeros = {0, 1};
    else if (row.work.framework == Framework::Torchtitan) zeros = {0, 3};
    else zeros = {0, 1, 2, 3};
  }
  // An unstated virtual pipeline: 1 or any interleaving the stages allow.
  std::vector<int> vpps = {row.layout.vpp};
  const bool vpp_filled = !stated("vpp") && row.layout.pp > 1;
  if (vpp_filled)
    for (int v = 2; v <= (model.layers + 2) / row.layout.pp; ++v) vpps.push_back(v);
  // An unstated torch.compile (torchtitan): off, its default, or on. A published throughput is a
  // tuned run, and compiling is what torchtitan's own benchmarks do (28 of the 30 torchtitan rows
  // here state it on), so it is one more choice the fastest layout below picks.
  std::vector<bool> compiles = {row.work.compile};
  if (run.filled_compile) compiles = {false, true};

  // Every combination, compile outermost and the virtual pipeline innermost.
  std::vector<Trial> trials = {{row.work.compile, row.layout}};
  trials = expand(trials, compiles, [](Trial& x, bool c) { x.compile = c; });
  trials = expand(trials, policies, [](Trial& x, const std::pair<Recompute, unsigned>& p) {
    x.layout.recompute = p.first;
    x.layout.recompute_modules = p.second;
  });
  trials = expand(trials, micro_batches, [](Trial& x, Count b) { x.layout.micro_batch = b; });
  trials = expand(trials, zeros, [](Trial& x, int z) { x.layout.zero = z; });
  trials = expand(trials, vpps, [&](Trial& x, int v) {
    Layout& l = x.layout;
    if (split_local_batch) {
      const Count count = pipeline_micro_batch_count(l.micro_batch, v);
      if (l.micro_batch % count != 0) {
        x.invalid = "local batch divisible by pp x vpp (torchtitan's micro-batch count)";
        return;
      }
      l.micro_batch /= count;
    }
    l.vpp = v;
    if (v > 1) l.schedule = Schedule::Interleaved;
    if (vpp_filled) split_pipeline_like_megatron(l, model, row.work.framework);
  });

  // The fastest that fits (on a tie the first, the cheaper recompute); if nothing fits, the
  // least memory. Fitting with the caching allocator's reserve beats fitting only by its retries:
  // a run whose reserved memory exceeds the GPU frees its cache and retries its allocations
  // (cudaFree of every cached block, a device synchronisation each time), which a run tuned for
  // throughput does not choose where a layout without them exists; the measured rows that fit
  // only so ran slower than priced (bench/RESULTS.md, 2026-12-06).
  RowFill best;
  int best_tier = 0;  // 0 does not fit, 1 fits only by the allocator's retries, 2 fits
  bool any = false;
  std::string last_error;
  // Prices a trial and keeps it if it is the best so far; how it fits (the tier), or nothing when
  // the layout is invalid.
  auto consider = [&](bool compile, const Layout& l) -> std::optional<int> {
    try {
      validate_layout(model, l, row.work, row.gpus);
    } catch (const LayoutError& e) {
      last_error = e.constraint();
      return std::nullopt;
    }
    Scenario trial = row;
    trial.layout = l;
    trial.work.compile = compile;
    trial.work.cross_entropy = compile ? run.compiled_cross_entropy : run.cross_entropy;
    Prediction p = price(trial);
    // A run that ran fitted its live tensors; fragmentation only made it retry (memory_needed_to_run).
    const bool fits = memory_needed_to_run(p) <= row.hardware.memory_capacity;
    const int tier = !fits ? 0 : p.peak_memory > row.hardware.memory_capacity ? 1 : 2;  // memory_fit's order
    const bool better =
        !any || tier > best_tier ||
        (tier == best_tier && (fits ? p.step_time < best.prediction.step_time : p.peak_memory < best.prediction.peak_memory));
    if (better) {
      best.prediction = p;
      best.layout = l;
      best.fits = fits;
      best_tier = tier;
      best.compile = compile;
      any = true;
    }
    return tier;
  };
  const bool block_recompute = unstated_recompute && run.has_block_recompute;
  const bool every_recompute = unstated_recompute && run.has_every_recompute;
  for (const Trial& trial : trials) {
    if (trial.invalid) {
      last_error = trial.invalid;
      continue;
    }
    const Layout& l = trial.layout;
    const int tier = consider(trial.compile, l).value_or(0);
    // Where every layer recomputed fits, fewer recomputed layers may too, and are faster: the
    // fewest that fit as well (memory falls and time rises with the count), found by bisection.
    if (l.recompute != Recompute::Full || tier == 0) continue;
    auto fits_as_well = [&](const Layout& x) { return consider(trial.compile, x).value_or(0) >= tier; };
    const std::vector<int> chunks = virtual_stage_layer_counts(model, l);
    if (every_recompute) {
      // torchtitan: checkpointing every k-th layer, the largest k that fits (k = 1 is every
      // layer, which fits).
      int lo = 1, hi = *std::max_element(chunks.begin(), chunks.end()) * l.virtual_stages();
      while (lo < hi) {
        Layout x = l;
        x.recompute_every = (lo + hi + 1) / 2;
        if (fits_as_well(x)) lo = x.recompute_every;
        else hi = x.recompute_every - 1;
      }
    }
    if (!block_recompute) continue;
    // Megatron's block recompute of the first n layers of each virtual stage.
    int lo = 1, hi = *std::max_element(chunks.begin(), chunks.end());  // hi: every layer, fits
    while (lo < hi) {
      Layout x = l;
      x.recompute_num_layers = (lo + hi) / 2;
      if (fits_as_well(x)) hi = x.recompute_num_layers;
      else lo = x.recompute_num_layers + 1;
    }
  }
  if (micro_batches.empty()) last_error = "global batch divisible by dp*micro-batch";
  if (!any) throw Error("layout invalid: " + last_error);

  // What was filled, as "field=value".
  const Layout& b = best.layout;
  std::vector<std::string>& filled = best.filled;
  if (unstated_recompute)
    filled.push_back("recompute=" + to_string(b.recompute) +
                     (b.block_recompute()
                          ? " (block, recompute_num_layers=" + std::to_string(b.recompute_num_layers) + ")"
                      : b.partial_recompute()
                          ? " (every k-th layer, recompute_every=" + std::to_string(b.recompute_every) + ")"
                          : std::string()));
  if (micro_batches.size() > 1 || row.layout.micro_batch <= 0) filled.push_back("micro_batch=" + std::to_string(b.micro_batch));
  if (run.filled_dp_overlap) filled.push_back(std::string("dp_overlap=") + (run.dp_overlap ? "on" : "off"));
  if (model.moe.enabled() && b.ep > 1) {
    if (b.etp > 1 && t.field(r, "etp").empty()) filled.push_back("etp=" + std::to_string(b.etp));
    if (run.filled_ep_dispatcher) filled.push_back(std::string("ep_dispatcher=") + (run.deepep_dispatch ? "deepep" : "alltoall"));
    if (run.filled_ep_overlap) filled.push_back(std::string("ep_overlap=") + (run.overlap_moe_ep_comm ? "on" : "off"));
  }
  if (run.filled_flash) filled.push_back(std::string("attention=") + (run.flash_attention ? "flash" : "fused-softmax"));
  if (run.tp_always_sequence_parallel && b.tp > 1 && t.field(r, "sp") != "1") filled.push_back("sp=on");
  if (run.filled_tp_overlap && b.tp > 1) filled.push_back(std::string("tp_overlap=") + (run.tp_overlap ? "on" : "off"));
  if (run.filled_compile) filled.push_back(std::string("compile=") + (best.compile ? "on" : "off"));
  if (run.filled_fsdp_float8_all_gather && fsdp_float8_gathers_apply(row.work, b))
    filled.push_back("fsdp_float8_all_gather=off");
  if (run.filled_float8_recipe && row.work.dtype == Dtype::FP8) filled.push_back("float8_recipe=tensorwise");
  if (split_local_batch) filled.push_back("pipeline_micro_batches=" + std::to_string(pipeline_local_batch / b.micro_batch));
  if (b.accounts_pipeline_split()) filled.push_back("pipeline_split=embedding,loss");
  if (!b.pipeline_layout.empty()) filled.push_back("pipeline_layout=" + b.pipeline_layout);
  if (vpp_filled) filled.push_back("vpp=" + std::to_string(b.vpp));
  if (zero_filled) filled.push_back("zero=" + std::to_string(b.zero));
  if (b.recompute == Recompute::Selective && rc == "selective" && b.recompute_modules != 0)
    filled.push_back("recompute_modules=" + recompute_modules_string(b.recompute_modules));
  return best;
}

}  // namespace sixfold
