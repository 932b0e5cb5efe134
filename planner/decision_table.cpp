#include "planner/decision_table.hpp"

#include <cstdio>

#include "models/model_zoo.hpp"
#include "planner/families.hpp"

namespace sixfold {

std::string verdict_of(const Layout& l) {
  std::string v;
  auto add = [&](const std::string& part) { v += (v.empty() ? "" : " + ") + part; };
  if (l.pp > 1) add("PP " + std::to_string(l.pp));
  if (l.tp > 1) add("TP " + std::to_string(l.tp));
  if (l.cp > 1) add("CP " + std::to_string(l.cp));
  if (l.ep > 1) add("EP " + std::to_string(l.ep));
  if (l.dp > 1 || v.empty()) add(l.dp * l.cp > 1 ? "ZeRO-" + std::to_string(l.zero) : "single GPU");
  if (l.shard_dp() < l.dp) v += " (hybrid, shard " + std::to_string(l.shard_dp()) + ")";
  if (l.recompute != Recompute::None) add(to_string(l.recompute) + " recompute");
  return v;
}

std::vector<DecisionCell> decision_table(const DecisionRequest& rq) {
  std::vector<DecisionCell> out;
  if (rq.progress) rq.progress->set_total(rq.models.size() * rq.hardware.size() * rq.gpus.size());
  for (const std::string& model : rq.models)
    for (const std::string& hw : rq.hardware)
      for (int g : rq.gpus) {
        PlanRequest pr;
        pr.model = load_model(model);
        pr.hardware = load_hardware(hw);
        pr.gpus = g;
        pr.work.seq = rq.seq;
        pr.work.global_batch = Count(g) * rq.sequences_per_gpu;
        pr.threads = rq.threads;
        pr.search.max_micro_batch = 8;
        restrict_to_framework(pr.search, pr.work.framework);
        pr.closest_count = 1;
        const PlanResult res = plan(pr);
        if (rq.progress) rq.progress->advance();
        DecisionCell c;
        c.model = model;
        c.hardware = hw;
        c.gpus = g;
        c.feasible = res.feasible();
        if (!c.feasible) {
          c.verdict = "does not fit";
          char buf[96];
          std::snprintf(buf, sizeof buf, "closest layout needs %.1f GiB of %.1f GiB budget",
                        res.closest.empty() ? 0.0 : res.closest.front().peak_memory / kGiB, res.budget / kGiB);
          c.why = buf;
          out.push_back(c);
          continue;
        }
        const Candidate& best = res.ranked.front();
        c.layout = best.layout;
        c.step_time = best.step_time;
        c.peak_memory = best.peak_memory;
        c.verdict = verdict_of(best.layout);
        // The runner-up: the fastest layout with a different verdict.
        for (const Candidate& other : res.ranked) {
          const std::string v = verdict_of(other.layout);
          if (v == c.verdict) continue;
          char buf[160];
          const double ratio = other.step_time / best.step_time;
          // Closer than the printed precision: a tie, not a win (planner/families.hpp, kTie).
          if (ratio - 1 < kTie) std::snprintf(buf, sizeof buf, "ties with %s (within %.1f%%)", v.c_str(), 100.0 * kTie);
          else std::snprintf(buf, sizeof buf, "beats %s by %.1f%%", v.c_str(), 100.0 * (ratio - 1));
          c.why = buf;
          break;
        }
        if (c.why.empty()) c.why = "the only kind of layout that fits";
        out.push_back(c);
      }
  return out;
}

}  // namespace sixfold
