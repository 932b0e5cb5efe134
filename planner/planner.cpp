#include "planner/planner.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

Bytes default_memory_budget(const HardwareProfile& hw) {
  return std::max(0.0, hw.memory_capacity - kDefaultMemoryReserve);
}

bool candidate_better(const Candidate& a, const Candidate& b) {
  if (a.step_time != b.step_time) return a.step_time < b.step_time;
  if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
  const int ca = complexity(a.layout), cb = complexity(b.layout);
  if (ca != cb) return ca < cb;
  return layout_less(a.layout, b.layout);
}

namespace {

bool closer(const Candidate& a, const Candidate& b) {
  if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
  return layout_less(a.layout, b.layout);
}

// Step time from per-stage times, aggregated exactly as predict() does.
Seconds step_from_stages(const Layout& l, Count m, const std::vector<StageTime>& st) {
  Seconds dp = 0, opt = 0;
  for (const auto& s : st) {
    dp = std::max(dp, s.dp);
    opt = std::max(opt, s.optimizer);
  }
  return pipeline_time(l, m, st) + dp + opt;
}

Bytes peak_of(const std::vector<MemoryBreakdown>& stages) {
  Bytes peak = 0;
  for (const auto& s : stages) peak = std::max(peak, s.total());
  return peak;
}

struct WorkerOutput {
  PruneCounts pruned;
  Count enumerated = 0, memory_checked = 0, evaluated = 0;
  std::vector<Candidate> fits;
  std::vector<Candidate> closest;
};

void keep_closest(std::vector<Candidate>& closest, const Candidate& c, size_t limit) {
  if (limit == 0) return;
  if (closest.size() == limit && !closer(c, closest.back())) return;
  closest.insert(std::upper_bound(closest.begin(), closest.end(), c, closer), c);
  if (closest.size() > limit) closest.pop_back();
}

// The layout's peak memory when it fits the budget; when it does not, a lower bound of it above the
// budget, which is all the search needs unless the layout could still enter the closest list (then
// the exact peak). Stages are visited first and last first: the first holds the most micro-batches
// in flight and the last the logits, so a layout over the budget is mostly known after one or two
// of its stages. The outcome equals taking the peak of every stage.
Bytes peak_or_bound(const PlanRequest& rq, const Layout& l, const StepProgram& prog, Bytes budget,
                    const std::vector<Candidate>& closest) {
  const int n = int(prog.stages.size());
  Bytes peak = 0;
  for (int k = 0; k < n; ++k) {
    const int s = k == 0 ? 0 : k == 1 ? n - 1 : k - 1;
    peak = std::max(peak, stage_memory_of(rq.model, rq.hardware, rq.work, l, prog, s).total());
    if (peak > budget && k + 1 < n) {
      const bool may_be_closest = closest.size() < size_t(rq.closest_count) || closer({l, 0, peak}, closest.back());
      return may_be_closest ? peak_of(stage_memory(rq.model, rq.hardware, rq.work, l, prog)) : peak;
    }
  }
  return peak;
}

void search_mesh(const PlanRequest& rq, Bytes budget, const Mesh& mesh, WorkerOutput& out) {
  const SearchOptions& o = rq.search;
  const auto keys = program_keys(rq.model, rq.work, mesh, o, out.pruned);
  const size_t policies = recompute_policies(rq.model, o).size();
  for (Count b : mesh.micro_batches) {
    const auto vs = variants(rq.model, rq.work, mesh, b, o, out.pruned);
    if (vs.empty()) continue;
    // Per variant: whether the same layout with sp on exceeded the budget (indexed by recompute).
    std::vector<std::vector<char>> sp_on_exceeds(policies, std::vector<char>(vs.size(), 0));
    for (bool sp : {true, false}) {
      std::vector<char> lighter_fits(vs.size(), 0);
      for (const ProgramKey& k : keys) {
        if (k.micro_batch != b || k.sp != sp) continue;
        out.enumerated += Count(vs.size());
        const int r = k.policy;
        // Skip the expansion when every variant is already decided.
        bool any = false;
        for (size_t i = 0; i < vs.size() && !any; ++i) any = !lighter_fits[i] && !(!sp && sp_on_exceeds[r][i]);
        if (!any) {
          for (size_t i = 0; i < vs.size(); ++i) {
            if (lighter_fits[i]) ++out.pruned["recompute not needed (a lighter policy fits)"];
            else ++out.pruned["memory (sp on already exceeds the budget)"];
          }
          continue;
        }
        const StepProgram prog = expand_step_program(rq.model, make_layout(mesh, k, vs.front()), rq.work);
        std::optional<LayerOpCosts> layers;  // priced at the first variant that fits, shared by the rest
        // stage_times only depends on the variant's zero stage, DP overlap and virtual stages.
        struct TimeKey { int zero; DpOverlap ov; int v; std::vector<StageTime> st; };
        std::vector<TimeKey> time_cache;
        for (size_t i = 0; i < vs.size(); ++i) {
          if (lighter_fits[i]) { ++out.pruned["recompute not needed (a lighter policy fits)"]; continue; }
          if (!sp && sp_on_exceeds[r][i]) { ++out.pruned["memory (sp on already exceeds the budget)"]; continue; }
          const Layout l = make_layout(mesh, k, vs[i]);
          const Bytes peak = peak_or_bound(rq, l, prog, budget, out.closest);
          ++out.memory_checked;
          if (peak > budget) {
            ++out.pruned["memory budget"];
            if (sp) sp_on_exceeds[r][i] = 1;
            keep_closest(out.closest, {l, 0, peak}, size_t(rq.closest_count));
            continue;
          }
          lighter_fits[i] = 1;
          const int v = l.virtual_stages();
          const TimeKey* tk = nullptr;
          for (const auto& c : time_cache)
            if (c.zero == l.zero && c.ov == l.dp_overlap && c.v == v) tk = &c;
          if (!tk) {
            if (!layers) layers = layer_costs(rq.model, rq.hardware, rq.work, l, prog);
            time_cache.push_back({l.zero, l.dp_overlap, v, stage_times(rq.model, rq.hardware, rq.work, l, prog, *layers)});
            tk = &time_cache.back();
          }
          ++out.evaluated;
          out.fits.push_back({l, step_from_stages(l, prog.micro_batches, tk->st), peak});
        }
      }
    }
  }
}

}  // namespace

Seconds fast_step_time(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l) {
  const StepProgram prog = expand_step_program(model, l, work);
  return step_from_stages(l, prog.micro_batches, stage_times(model, hw, work, l, prog));
}

PlanResult plan(const PlanRequest& rq) {
  PlanResult res;
  res.budget = rq.memory_budget > 0 ? rq.memory_budget : default_memory_budget(rq.hardware);
  const std::vector<Mesh> meshes =
      enumerate_meshes(rq.model, rq.work, rq.gpus, rq.hardware.gpus_per_node, rq.search, res.pruned);
  res.meshes = Count(meshes.size());
  int threads = rq.threads > 0 ? rq.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, int(meshes.size())));
  std::vector<WorkerOutput> outputs(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  auto work = [&](int t) {
    for (size_t i = next++; i < meshes.size(); i = next++) {
      search_mesh(rq, res.budget, meshes[i], outputs[size_t(t)]);
      if (rq.progress) rq.progress->advance();
    }
  };
  if (rq.progress) rq.progress->set_total(meshes.size());
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();
  }
  // Deterministic merge: which thread priced what does not matter, the order is total.
  for (auto& o : outputs) {
    add_counts(res.pruned, o.pruned);
    res.enumerated += o.enumerated;
    res.memory_checked += o.memory_checked;
    res.evaluated += o.evaluated;
    res.ranked.insert(res.ranked.end(), o.fits.begin(), o.fits.end());
    res.closest.insert(res.closest.end(), o.closest.begin(), o.closest.end());
  }
  std::sort(res.ranked.begin(), res.ranked.end(), candidate_better);
  std::sort(res.closest.begin(), res.closest.end(), closer);
  if (res.closest.size() > size_t(rq.closest_count)) res.closest.resize(size_t(rq.closest_count));
  if (rq.refine > 0) refine_with_simulator(rq, res, rq.refine);
  return res;
}

}  // namespace sixfold
