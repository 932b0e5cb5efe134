#include "planner/families.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <thread>

#include "simulator/cost_model.hpp"
#include "simulator/step_simulator.hpp"

namespace sixfold {

namespace {

std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

std::string explain_difference(const PlanRequest& rq, const Layout& winner, const Layout& loser,
                               std::optional<double> step_ratio) {
  const Prediction a = predict(rq.model, rq.hardware, rq.work, winner);
  const Prediction b = predict(rq.model, rq.hardware, rq.work, loser);
  const double ratio = step_ratio.value_or(b.step_time / a.step_time);
  // Within the printed precision the two are a tie, whichever comes first.
  if (std::abs(ratio - 1) < kTie) return fmt("a tie (step within %.1f%%)", 100.0 * kTie);
  std::string out = fmt("step %+.1f%%", 100.0 * (ratio - 1));
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
    if (name == "tp_comm" && loser.tp > rq.hardware.scale_up_gpus()) out = "tp=" + std::to_string(loser.tp) + " crosses nodes: " + out;
    else if (name == "bubble") out += fmt(", pipeline bubble over %.0f micro-batches", double(b.micro_batches));
    else if (name == "recompute") out += " re-running the forward to save activations";
    else if (name == "dp_comm" && loser.zero == 3) out += " gathering ZeRO-3 parameters every micro-batch";
  }
  if (b.peak_memory < a.peak_memory) out += fmt("; it needs %.1f GiB less memory", (a.peak_memory - b.peak_memory) / kGiB);
  return out;
}

namespace {

// The structural choices a family is about; dp and the micro-batch follow from them.
enum Field : unsigned { kTp = 1, kPp = 2, kVpp = 4, kCp = 8, kEp = 16, kZero = 32, kRecompute = 64 };

unsigned changed_fields(const Layout& a, const Layout& b) {
  const auto bit = [](bool changed, Field f) { return changed ? unsigned(f) : 0u; };
  return bit(a.tp != b.tp, kTp) | bit(a.pp != b.pp, kPp) | bit(a.vpp != b.vpp, kVpp) | bit(a.cp != b.cp, kCp) |
         bit(a.ep != b.ep, kEp) | bit(a.zero != b.zero, kZero) | bit(a.recompute != b.recompute, kRecompute);
}

// "tp 1->2, cp 1->4": what else a family's layout changes against the recommended one.
std::string describe_changes(const Layout& from, const Layout& to, unsigned fields) {
  std::string out;
  auto add = [&](const char* name, long long a, long long b) {
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(a) + "->" + std::to_string(b);
  };
  if (fields & kTp) add("tp", from.tp, to.tp);
  if (fields & kPp) add("pp", from.pp, to.pp);
  if (fields & kVpp) add("vpp", from.vpp, to.vpp);
  if (fields & kCp) add("cp", from.cp, to.cp);
  if (fields & kEp) add("ep", from.ep, to.ep);
  if (fields & kZero) add("zero", from.zero, to.zero);
  if (fields & kRecompute) out += (out.empty() ? "" : ", ") + std::string("recompute ") + to_string(from.recompute) + "->" + to_string(to.recompute);
  return out;
}

}  // namespace

std::vector<FamilyVerdict> compare_families(const PlanRequest& rq, const PlanResult& res, const Candidate& rec) {
  struct Family {
    std::string name;
    std::function<bool(const Layout&)> member;
    unsigned own;  // the fields the family is about
  };
  const Layout& r = rec.layout;
  const int per_node = rq.hardware.scale_up_gpus();
  std::vector<Family> families = {
      {"no PP", [](const Layout& l) { return l.pp == 1; }, kPp | kVpp},
      {"PP", [](const Layout& l) { return l.pp > 1; }, kPp | kVpp},
      {"no TP", [](const Layout& l) { return l.tp == 1; }, kTp},
      {"TP", [](const Layout& l) { return l.tp > 1; }, kTp},
      {"pure DP (ZeRO only)", [](const Layout& l) { return l.tp == 1 && l.pp == 1 && l.cp == 1; }, kTp | kPp | kVpp | kCp | kZero},
      {"ZeRO-3 instead of PP", [](const Layout& l) { return l.zero == 3 && l.pp == 1; }, kZero | kPp | kVpp},
      {"more CP", [r](const Layout& l) { return l.cp > r.cp; }, kCp},
      {"less CP", [r](const Layout& l) { return l.cp < r.cp; }, kCp},
      {"less TP", [r](const Layout& l) { return l.tp < r.tp; }, kTp},
      {"more TP", [r](const Layout& l) { return l.tp > r.tp; }, kTp},
      {"TP across nodes", [per_node](const Layout& l) { return l.tp > per_node; }, kTp},
      {"no recompute", [](const Layout& l) { return l.recompute == Recompute::None; }, kRecompute},
      {"lower ZeRO stage", [r](const Layout& l) { return l.zero < r.zero; }, kZero},
      {"higher ZeRO stage", [r](const Layout& l) { return l.zero > r.zero; }, kZero},
  };
  // Pick each family's layout: its fastest that changes only what the family is about (dp and the
  // micro-batch follow), failing that its fastest, whose other changes the label says. A layout
  // that stands for several families is one entry under all of their names.
  // One pass over the ranking for all families at once (it runs to the end for a family without
  // a pure layout, and holds up to a million layouts).
  const size_t n = families.size();
  std::vector<const Candidate*> pure(n, nullptr), any(n, nullptr);
  std::vector<char> open(n);
  size_t unresolved = 0;
  for (size_t i = 0; i < n; ++i) unresolved += open[i] = !families[i].member(r);
  for (const Candidate& c : res.ranked) {
    if (unresolved == 0) break;
    const unsigned changed = changed_fields(r, c.layout);
    for (size_t i = 0; i < n; ++i) {
      if (!open[i] || !families[i].member(c.layout)) continue;
      if (!any[i]) any[i] = &c;
      if ((changed & ~families[i].own) == 0) {
        pure[i] = &c;
        open[i] = 0;
        --unresolved;
      }
    }
  }
  std::vector<FamilyVerdict> out;
  std::vector<unsigned> own;  // per entry: the fields its families are about, together
  for (size_t fi = 0; fi < n; ++fi) {
    const Family& f = families[fi];
    if (f.member(r)) continue;  // the recommended layout belongs to it
    FamilyVerdict v;
    v.family = f.name;
    if (pure[fi] || any[fi]) v.best = pure[fi] ? *pure[fi] : *any[fi];
    if (!v.best) {
      // A family nobody enumerated (e.g. "more TP" at the largest TP) says nothing; skip it.
      bool enumerable = false;
      for (const Candidate& c : res.closest) enumerable = enumerable || f.member(c.layout);
      if (!enumerable && f.name != "no PP" && f.name != "no TP" && f.name != "pure DP (ZeRO only)" &&
          f.name != "ZeRO-3 instead of PP")
        continue;
      v.why = "no layout of this family fits the memory budget";
      out.push_back(std::move(v));
      own.push_back(f.own);
      continue;
    }
    bool merged = false;
    for (size_t i = 0; i < out.size() && !merged; ++i)
      if (out[i].best && out[i].best->layout == v.best->layout) {
        out[i].family += ", " + f.name;
        own[i] |= f.own;
        merged = true;
      }
    if (merged) continue;
    out.push_back(std::move(v));
    own.push_back(f.own);
  }

  // Both sides of a comparison on the predictor that ranked them: the simulator where the
  // recommendation was refined by it (a family's layout outside the refined top is simulated
  // here, one thread each, as refine_with_simulator does), else the closed form.
  const bool simulated = rec.simulated_step_time > 0;
  std::vector<Seconds> times(out.size(), 0);
  std::vector<size_t> to_simulate;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].best) continue;
    times[i] = simulated ? out[i].best->simulated_step_time : out[i].best->step_time;
    if (times[i] <= 0) to_simulate.push_back(i);
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < to_simulate.size(); k = next++) {
      const size_t i = to_simulate[k];
      times[i] = simulate_step(rq.model, rq.hardware, rq.work, out[i].best->layout).step_time;
    }
  };
  const int threads = std::max(1, std::min<int>(rq.threads > 0 ? rq.threads : int(std::max(1u, std::thread::hardware_concurrency())),
                                                int(to_simulate.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();

  const Seconds rec_time = simulated ? rec.simulated_step_time : rec.step_time;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].best) continue;
    const unsigned extra = changed_fields(r, out[i].best->layout) & ~own[i];
    if (extra != 0) out[i].family += " (also " + describe_changes(r, out[i].best->layout, extra) + ")";
    out[i].why = explain_difference(rq, r, out[i].best->layout, times[i] / rec_time);
  }
  return out;
}

}  // namespace sixfold
