#include "planner/families.hpp"

#include <cstdio>
#include <functional>

#include "simulator/cost_model.hpp"

namespace sixfold {

namespace {

std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

std::string explain_difference(const PlanRequest& rq, const Layout& winner, const Layout& loser) {
  const Prediction a = predict(rq.model, rq.hardware, rq.work, winner);
  const Prediction b = predict(rq.model, rq.hardware, rq.work, loser);
  std::string out = fmt("step %+.1f%%", 100.0 * (b.step_time / a.step_time - 1));
  const auto ca = a.time.components(), cb = b.time.components();
  size_t worst = 0;
  double worst_delta = -1e300;
  for (size_t i = 0; i < ca.size(); ++i) {
    const double d = cb[i].second - ca[i].second;
    if (d > worst_delta) { worst_delta = d; worst = i; }
  }
  if (worst_delta > 0) {
    const std::string& name = cb[worst].first;
    out += ": " + name + " " + fmt("%+.3f s", worst_delta);
    if (ca[worst].second > 0) out += fmt(" (%+.0f%%)", 100.0 * worst_delta / ca[worst].second);
    if (name == "tp_comm" && loser.tp > rq.hardware.gpus_per_node) out = "tp=" + std::to_string(loser.tp) + " crosses nodes: " + out;
    else if (name == "bubble") out += fmt(", pipeline bubble over %.0f micro-batches", double(b.micro_batches));
    else if (name == "recompute") out += " re-running the forward to save activations";
    else if (name == "dp_comm" && loser.zero == 3) out += " gathering ZeRO-3 parameters every micro-batch";
  }
  if (b.peak_memory < a.peak_memory) out += fmt("; it needs %.1f GiB less memory", (a.peak_memory - b.peak_memory) / kGiB);
  return out;
}

std::vector<FamilyVerdict> compare_families(const PlanRequest& rq, const PlanResult& res, const Candidate& rec) {
  struct Family {
    std::string name;
    std::function<bool(const Layout&)> member;
  };
  const Layout& r = rec.layout;
  const int per_node = rq.hardware.gpus_per_node;
  std::vector<Family> families = {
      {"no PP", [](const Layout& l) { return l.pp == 1; }},
      {"PP", [](const Layout& l) { return l.pp > 1; }},
      {"no TP", [](const Layout& l) { return l.tp == 1; }},
      {"TP", [](const Layout& l) { return l.tp > 1; }},
      {"pure DP (ZeRO only)", [](const Layout& l) { return l.tp == 1 && l.pp == 1 && l.cp == 1; }},
      {"ZeRO-3 instead of PP", [](const Layout& l) { return l.zero == 3 && l.pp == 1; }},
      {"more CP", [r](const Layout& l) { return l.cp > r.cp; }},
      {"less CP", [r](const Layout& l) { return l.cp < r.cp; }},
      {"less TP", [r](const Layout& l) { return l.tp < r.tp; }},
      {"more TP", [r](const Layout& l) { return l.tp > r.tp; }},
      {"TP across nodes", [per_node](const Layout& l) { return l.tp > per_node; }},
      {"no recompute", [](const Layout& l) { return l.recompute == Recompute::None; }},
      {"lower ZeRO stage", [r](const Layout& l) { return l.zero < r.zero; }},
      {"higher ZeRO stage", [r](const Layout& l) { return l.zero > r.zero; }},
  };
  std::vector<FamilyVerdict> out;
  for (const Family& f : families) {
    if (f.member(r)) continue;  // the recommended layout belongs to it
    FamilyVerdict v;
    v.family = f.name;
    for (const Candidate& c : res.ranked)
      if (f.member(c.layout)) { v.best = c; break; }
    if (!v.best) {
      // A family nobody enumerated (e.g. "more TP" at the largest TP) says nothing; skip it.
      bool enumerable = false;
      for (const Candidate& c : res.closest) enumerable = enumerable || f.member(c.layout);
      if (!enumerable && f.name != "no PP" && f.name != "no TP" && f.name != "pure DP (ZeRO only)" &&
          f.name != "ZeRO-3 instead of PP")
        continue;
      v.why = "no layout of this family fits the memory budget";
    } else {
      v.why = explain_difference(rq, r, v.best->layout);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace sixfold
