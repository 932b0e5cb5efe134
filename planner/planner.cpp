#include "planner/planner.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <iterator>
#include <optional>
#include <thread>
#include <tuple>

#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

Bytes default_memory_budget(const HardwareProfile& hw) {
  return std::max(0.0, hw.memory_capacity / (1 + kMemoryUnderPredictionMargin));
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

// Counts by reason, keyed by the reason's static string: the search's inner loop counts millions
// of decisions, too many for a map of strings (folded into PruneCounts once, at the end).
class ReasonCounts {
 public:
  void add(const char* reason) {
    for (auto& [r, n] : counts_)
      if (r == reason) { ++n; return; }
    counts_.push_back({reason, 1});
  }
  void fold_into(PruneCounts& into) const {
    for (const auto& [r, n] : counts_) into[r] += n;
  }

 private:
  std::vector<std::pair<const char*, Count>> counts_;
};

struct WorkerOutput {
  PruneCounts pruned;
  ReasonCounts decided;  // layouts the search decides without pricing them
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
// of its stages. A stage that runs the same work as the one before it holds no more micro-batches
// than it (every schedule's in-flight count falls with the stage; tests/planner/test_search_pruning)
// and is skipped. The outcome equals taking the peak of every stage.
Bytes peak_or_bound(const PlanRequest& rq, const Layout& l, const StepProgram& prog, Bytes budget,
                    const std::vector<Candidate>& closest) {
  const int n = int(prog.stages.size());
  Bytes peak = 0;
  for (int k = 0; k < n; ++k) {
    const int s = k == 0 ? 0 : k == 1 ? n - 1 : k - 1;
    if (k >= 2 && s >= 1 && same_stage_work(prog.stages[size_t(s)], prog.stages[size_t(s - 1)])) continue;
    peak = std::max(peak, stage_memory_of(rq.model, rq.hardware, rq.work, l, prog, s).total());
    if (peak > budget && k + 1 < n) {
      const bool may_be_closest = closest.size() < size_t(rq.closest_count) || closer({l, 0, peak}, closest.back());
      return may_be_closest ? peak_of(stage_memory(rq.model, rq.hardware, rq.work, l, prog)) : peak;
    }
  }
  return peak;
}

// What the meshes of one layer shape (tp, cp, ep, etp) share, per program key: the program parts
// (layer programs and stage edges) and their prices. Meshes of a shape differ in dp, pp and the
// stage split, which change none of them but for pp = 1 against pp > 1 (same_program_parts,
// layer_list_costs, edge_costs), and where DeepSpeed's BF16_Optimizer runs at one ZeRO stage and not another.
class ShapeCache {
 public:
  struct Entry {
    Layout shape;  // a layout these parts belong to
    std::shared_ptr<const ProgramParts> parts;
    bool lists_priced = false;
    std::array<bool, 4> edges_priced{};  // by ProgramParts::edge_index
    LayerOpCosts costs;                  // what is priced of them
  };
  void clear() { entries_.clear(); }
  Entry& at(const PlanRequest& rq, const Layout& l) {
    for (Entry& e : entries_)
      if (same_program_parts(e.shape, l, rq.work) && e.shape.tp_overlap == l.tp_overlap) return e;
    entries_.push_back({l, program_parts(rq.model, l, rq.work), false, {}, {}});
    return entries_.back();
  }

 private:
  std::deque<Entry> entries_;  // a handful per shape (micro-batches x sp x recompute policies)
};

// The program's layer and edge prices, from the cache where an earlier mesh of the shape priced them.
const LayerOpCosts& cached_layer_costs(const PlanRequest& rq, const OpPricer& pricer, const Layout& l,
                                       const StepProgram& prog, ShapeCache::Entry& e) {
  if (!e.lists_priced) {
    static_cast<LayerListCosts&>(e.costs) = layer_list_costs(rq.model, pricer, l, prog);
    e.lists_priced = true;
  }
  for (const StageProgram& st : prog.stages) {
    const size_t at = ProgramParts::edge_index(st.first, st.last);
    if (!e.edges_priced[at]) e.costs.by_place[at] = edge_costs(pricer, l, st), e.edges_priced[at] = true;
  }
  return e.costs;
}

void search_mesh(const PlanRequest& rq, Bytes budget, const Mesh& mesh, ShapeCache& cache, WorkerOutput& out) {
  const SearchOptions& o = rq.search;
  const auto keys = program_keys(rq.model, rq.work, mesh, o, out.pruned);
  const std::vector<RecomputePolicy> policy_list = recompute_policies(rq.model, o);
  const size_t policies = policy_list.size();
  // Group placements depend on the mesh alone, not on the program key or the variant.
  std::optional<OpPricer> pricer;
  // Each stage's DP traffic, by what it depends on (same_dp_traffic): the stages are the mesh's.
  std::vector<std::pair<Layout, std::vector<DpTraffic>>> dp_cache;
  auto dp_of = [&](const Layout& l, const StepProgram& prog) -> const std::vector<DpTraffic>& {
    for (const auto& [key, dp] : dp_cache)
      if (same_dp_traffic(key, l)) return dp;
    dp_cache.emplace_back(l, dp_traffic_by_stage(rq.model, rq.hardware, rq.work, l, prog));
    return dp_cache.back().second;
  };
  // Per sp, recompute policy and variant: whether the layout exceeded the budget at the previous
  // micro-batch size. A larger micro-batch holds at least as much (every activation, the logits and
  // the workspaces grow with it; fewer micro-batches in flight never make up for it, since
  // in-flight micro-batches times their size is capped by the replica's batch) and is skipped.
  std::vector<Variant> previous_variants;
  std::vector<char> previous_exceeds;  // [sp][policy][variant], flat
  auto flat = [&](bool sp, size_t r, size_t i, size_t variants) { return (size_t(sp) * policies + r) * variants + i; };
  for (Count b : mesh.micro_batches) {
    const auto vs = variants(rq.model, rq.work, mesh, b, o, out.pruned);
    if (vs.empty()) continue;
    // This micro-batch's, and the smaller one's carried over to this one's variants.
    std::vector<char> exceeds(2 * policies * vs.size(), 0);
    auto at = [&](bool sp, size_t r, size_t i) { return flat(sp, r, i, vs.size()); };
    if (!previous_exceeds.empty())
      for (size_t i = 0; i < vs.size(); ++i)
        for (size_t j = 0; j < previous_variants.size(); ++j)
          if (vs[i] == previous_variants[j])
            for (bool sp : {false, true})
              for (size_t r = 0; r < policies; ++r)
                exceeds[at(sp, r, i)] = previous_exceeds[flat(sp, r, j, previous_variants.size())];
    const std::vector<char> smaller_exceeds = exceeds;
    for (bool sp : {true, false}) {
      // Per variant, the recompute policies (indices) that fit at this micro-batch and sp.
      std::vector<std::vector<int>> fitting(vs.size());
      for (const ProgramKey& k : keys) {
        if (k.micro_batch != b || k.sp != sp) continue;
        out.enumerated += Count(vs.size());
        const int r = k.policy;
        // Decided without a memory check: a policy recomputing a subset of this one's fits (this one
        // would only be slower, recomputes_subset), or
        // a layout that holds no more exceeds the budget (sp on against off, a smaller micro-batch).
        // Block recompute of as many layers as a virtual stage holds is full recompute, and every
        // k-th layer with k above a rank's layers recomputes nothing: each tried on its own.
        auto whole_chunks = [&](size_t i) {
          if (k.recompute_num_layers == 0 && k.recompute_every == 0) return false;
          const int recomputed = fully_recomputed_layers(rq.model, make_layout(mesh, k, vs[i]));
          return recomputed == 0 || recomputed == rq.model.layers;
        };
        auto lighter_fits = [&](size_t i) {
          for (int p : fitting[i])
            if (recomputes_subset(policy_list[size_t(p)], policy_list[size_t(r)])) return true;
          return false;
        };
        auto decided = [&](size_t i) -> const char* {
          if (lighter_fits(i)) return "recompute not needed (a lighter policy fits)";
          if (whole_chunks(i)) return "partial recompute of every layer or of none (full or no recompute)";
          if (smaller_exceeds[at(sp, size_t(r), i)]) return "memory (a smaller micro-batch already exceeds the budget)";
          if (!sp && exceeds[at(true, size_t(r), i)]) return "memory (sp on already exceeds the budget)";
          return nullptr;
        };
        // Skip the expansion when every variant is already decided.
        bool any = false;
        for (size_t i = 0; i < vs.size() && !any; ++i) any = !decided(i);
        if (!any) {
          for (size_t i = 0; i < vs.size(); ++i) {
            out.decided.add(decided(i));
            if (!lighter_fits(i)) exceeds[at(sp, size_t(r), i)] = 1;
          }
          continue;
        }
        // The variants' program, one per set of program parts among them (variants differ in the
        // ZeRO stage, which DeepSpeed's BF16_Optimizer tells apart: same_program_parts), with its ops
        // priced at the first variant of the class that fits and shared by the rest.
        struct Shared {
          ShapeCache::Entry* shape;
          StepProgram prog;
          std::optional<std::vector<StageOps>> ops;
        };
        std::deque<Shared> shared_programs;  // a deque: entries stay where they are as it grows
        auto shared_for = [&](const Layout& l) -> Shared& {
          for (Shared& s : shared_programs)
            if (same_program_parts(s.shape->shape, l, rq.work)) return s;
          ShapeCache::Entry& shape = cache.at(rq, l);
          shared_programs.push_back({&shape, expand_step_program(rq.model, l, rq.work, shape.parts), std::nullopt});
          return shared_programs.back();
        };
        // stage_times only depends on the variant's zero stage, DP overlap and virtual stages.
        struct TimeKey { int zero; DpOverlap ov; int v; std::vector<StageTime> st; };
        std::vector<TimeKey> time_cache;
        for (size_t i = 0; i < vs.size(); ++i) {
          if (const char* why = decided(i)) {
            out.decided.add(why);
            if (!lighter_fits(i)) exceeds[at(sp, size_t(r), i)] = 1;
            continue;
          }
          const Layout l = make_layout(mesh, k, vs[i]);
          Shared& shared = shared_for(l);
          ShapeCache::Entry& shape = *shared.shape;
          std::optional<std::vector<StageOps>>& ops = shared.ops;
          // Which layers block recompute keeps depends on the virtual stages: its own program.
          std::optional<StepProgram> own;
          if (l.partial_recompute()) own = expand_step_program(rq.model, l, rq.work, shape.parts);
          const StepProgram& prog = own ? *own : shared.prog;
          const Bytes peak = peak_or_bound(rq, l, prog, budget, out.closest);
          ++out.memory_checked;
          if (peak > budget) {
            out.decided.add("memory budget");
            exceeds[at(sp, size_t(r), i)] = 1;
            keep_closest(out.closest, {l, 0, peak}, size_t(rq.closest_count));
            continue;
          }
          fitting[i].push_back(r);
          const int v = l.virtual_stages();
          const TimeKey* tk = nullptr;
          for (const auto& c : time_cache)
            if (c.zero == l.zero && c.ov == l.dp_overlap && c.v == v) tk = &c;
          if (!tk || own) {
            if (!pricer) pricer.emplace(OpPricer::of(rq.hardware, l, rq.work));
            std::optional<std::vector<StageOps>> own_ops;
            if (own) own_ops = stage_ops(prog, cached_layer_costs(rq, *pricer, l, prog, shape));
            else if (!ops) ops = stage_ops(prog, cached_layer_costs(rq, *pricer, l, prog, shape));
            time_cache.push_back({l.zero, l.dp_overlap, own ? -1 : v,
                                  stage_times(rq.model, rq.hardware, rq.work, l, prog, *pricer, own ? *own_ops : *ops,
                                              &dp_of(l, prog))});
            tk = &time_cache.back();
          }
          ++out.evaluated;
          out.fits.push_back({l, step_from_stages(l, prog.micro_batches, tk->st), peak});
        }
      }
    }
    previous_variants = vs;
    previous_exceeds = std::move(exceeds);
  }
}

}  // namespace

Seconds fast_step_time(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l) {
  const StepProgram prog = expand_step_program(model, l, work);
  return step_from_stages(l, prog.micro_batches, stage_times(model, hw, work, l, prog));
}

PlanResult plan(const PlanRequest& rq) {
  validate_workload(rq.model, rq.work);  // no layout could run a workload its framework does not
  PlanResult res;
  res.budget = rq.memory_budget > 0 ? rq.memory_budget : default_memory_budget(rq.hardware);
  std::vector<Mesh> meshes =
      enumerate_meshes(rq.model, rq.work, rq.gpus, rq.hardware.scale_up_gpus(), rq.search, res.pruned);
  res.meshes = Count(meshes.size());
  // Meshes of one layer shape go to one worker in a row, so that it builds and prices their layers once.
  auto shape_of = [](const Mesh& m) { return std::tuple(m.tp, m.cp, m.ep, m.etp); };
  std::stable_sort(meshes.begin(), meshes.end(), [&](const Mesh& a, const Mesh& b) { return shape_of(a) < shape_of(b); });
  std::vector<size_t> group_starts;
  for (size_t i = 0; i < meshes.size(); ++i)
    if (i == 0 || shape_of(meshes[i]) != shape_of(meshes[i - 1])) group_starts.push_back(i);
  group_starts.push_back(meshes.size());
  const size_t groups = group_starts.size() - 1;
  // Largest groups first, so that the last one a worker takes is small and the workers finish together.
  std::vector<size_t> order(groups);
  for (size_t g = 0; g < groups; ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return group_starts[a + 1] - group_starts[a] > group_starts[b + 1] - group_starts[b];
  });
  int threads = rq.threads > 0 ? rq.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, int(groups)));
  std::vector<WorkerOutput> outputs(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  auto work = [&](int t) {
    ShapeCache cache;
    for (size_t j = next++; j < groups; j = next++) {
      const size_t g = order[j];
      cache.clear();
      for (size_t i = group_starts[g]; i < group_starts[g + 1]; ++i) {
        search_mesh(rq, res.budget, meshes[i], cache, outputs[size_t(t)]);
        if (rq.progress) rq.progress->advance();
      }
    }
    // Each worker sorts its own layouts (in parallel); the merge below keeps the order.
    std::sort(outputs[size_t(t)].fits.begin(), outputs[size_t(t)].fits.end(), candidate_better);
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
    if (res.ranked.empty()) {
      res.ranked = std::move(o.fits);
    } else {
      std::vector<Candidate> merged;
      merged.reserve(res.ranked.size() + o.fits.size());
      std::merge(std::make_move_iterator(res.ranked.begin()), std::make_move_iterator(res.ranked.end()),
                 std::make_move_iterator(o.fits.begin()), std::make_move_iterator(o.fits.end()),
                 std::back_inserter(merged), candidate_better);
      res.ranked = std::move(merged);
    }
    add_counts(res.pruned, o.pruned);
    o.decided.fold_into(res.pruned);
    res.enumerated += o.enumerated;
    res.memory_checked += o.memory_checked;
    res.evaluated += o.evaluated;
    res.closest.insert(res.closest.end(), o.closest.begin(), o.closest.end());
  }
  std::sort(res.closest.begin(), res.closest.end(), closer);
  if (res.closest.size() > size_t(rq.closest_count)) res.closest.resize(size_t(rq.closest_count));
  if (rq.refine > 0) refine_with_simulator(rq, res, rq.refine);
  return res;
}

}  // namespace sixfold
