// sixfold plan: search every layout for the GPUs, recommend the fastest that fits the memory
// budget, say why the best of each other family loses, and export the plan. The analytical ranking's
// top --refine layouts are re-priced with the step simulator and re-ranked by simulated time.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "planner/exporters.hpp"
#include "simulator/step_simulator.hpp"
#include "tools/cli/html_report.hpp"
#include "planner/families.hpp"
#include "planner/plan_file.hpp"
#include "planner/planner.hpp"
#include "simulator/io/prediction_json.hpp"
#include "common/file_io.hpp"
#include "common/progress.hpp"
#include "common/suggest.hpp"
#include "models/layout_fields.hpp"
#include "tools/cli/command.hpp"
#include "tools/cli/flags.hpp"
#include "tools/cli/report.hpp"
#include "tools/cli/scenario_options.hpp"

namespace sixfold::cli {
namespace {

// "tp=8,pp=16,zero=1,sp,recompute=selective": a layout to hold against the recommendation. Keys
// are the layout fields of a plan file (models/layout_fields.hpp; mbs for micro_batch); a flag
// without a value is on; dp is derived from the GPUs when left out; TP overlap, when left out, is
// what the search assumed (tp_overlap_default: the recommendation and the compared layout are priced
// alike).
Layout parse_layout_spec(const std::string& spec, int gpus, bool tp_overlap_default, Framework framework) {
  Layout l;
  bool dp_given = false, schedule_given = false, vpp_given = false, tp_overlap_given = false, dp_overlap_given = false;
  // Items split at commas; the commas a Megatron pipeline layout may hold ("Et*3|(tt|)*29,m|L")
  // join the items after it back to its value while they are no key of their own.
  std::vector<std::string> items;
  for (size_t start = 0; start <= spec.size();) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    const bool key_of_its_own = item.find('=') != std::string::npos || find_layout_field(item);
    if (!items.empty() && !key_of_its_own && !item.empty() &&
        items.back().rfind("pipeline_model_parallel_layout=", 0) == 0)
      items.back() += "," + item;
    else
      items.push_back(std::move(item));
  }
  for (const std::string& item : items) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const LayoutField* f = find_layout_field(key);
    if (!f) {
      std::string allowed;
      for (const std::string& k : layout_field_keys()) allowed += (allowed.empty() ? "" : ", ") + k;
      throw UsageError("--compare: unknown key '" + key + "'" + did_you_mean(key, layout_field_keys()) + " (allowed: " +
                       allowed + ")");
    }
    f->set(l, f->type == FieldType::Flag && value.empty() ? "true" : value, "--compare " + key);
    dp_given = dp_given || f->key == std::string("dp");
    schedule_given = schedule_given || f->key == std::string("schedule");
    vpp_given = vpp_given || f->key == std::string("vpp");
    tp_overlap_given = tp_overlap_given || f->key == std::string("tp_overlap");
    dp_overlap_given = dp_overlap_given || f->key == std::string("dp_overlap");
  }
  if (!dp_overlap_given) l.dp_overlap = default_dp_overlap(framework, l.pp);
  if (!tp_overlap_given) l.tp_overlap = tp_overlap_default && l.tp > 1 && l.sp;
  if (!schedule_given && l.vpp > 1) l.schedule = Schedule::Interleaved;
  if (!schedule_given && !vpp_given) take_vpp_from_pipeline_layout(l);
  if (!dp_given) {
    try {
      l.dp = dp_for_gpus(l, gpus);
    } catch (const LayoutError& e) {
      throw UsageError("--compare " + spec + ": " + e.what() + "; give dp= or other degrees");
    }
  }
  return l;
}

struct PlanCommand {
  ScenarioFlags flags;
  std::string export_path, export_format, schedules, report;
  std::optional<Bytes> mem_budget;
  std::vector<std::string> compare;
  std::optional<int> threads, top, max_tp, refine;
  std::optional<long long> max_micro_batch;
  bool json = false, explain = false, no_tp_overlap = false, no_hybrid_sharding = false;

  int run() const {
    // `--export torchtitan` names a file, yet reads as a format: refuse it before a search priced
    // for the default framework writes a YAML plan under that name.
    if (export_format.empty())
      for (const char* f : {"megatron", "deepspeed", "torchtitan"})
        if (export_path == f)
          throw UsageError("--export " + export_path + " names the file to write; for the " + export_path +
                           " format add --export-format " + export_path + " (e.g. --export plan." +
                           (export_path == "megatron" ? "txt" : export_path == "deepspeed" ? "json" : "toml") +
                           " --export-format " + export_path + ")");
    Scenario s = flags.resolve(false);
    // Planning for a framework's export prices that framework unless --framework says otherwise.
    const ExportFormat format = export_format.empty() ? ExportFormat::Yaml : parse_export_format(export_format);
    if (flags.framework.empty()) {
      if (format == ExportFormat::Torchtitan) s.work.framework = Framework::Torchtitan;
      if (format == ExportFormat::DeepSpeed) s.work.framework = Framework::DeepSpeed;
    }
    PlanRequest rq;
    rq.model = s.model;
    rq.hardware = s.hardware;
    rq.gpus = s.gpus;
    rq.work = s.work;
    rq.threads = threads.value_or(0);
    rq.closest_count = 40;  // enough to list five that differ in more than schedule or DP overlap
    rq.refine = refine.value_or(kDefaultRefine);
    if (mem_budget) rq.memory_budget = *mem_budget;
    rq.search.max_tp = max_tp.value_or(0);
    rq.search.tp_overlap = !no_tp_overlap;
    if (no_hybrid_sharding) rq.search.hybrid_sharding = false;
    restrict_to_framework(rq.search, s.work.framework);
    rq.search.max_micro_batch = max_micro_batch.value_or(64);
    if (compare.size() > size_t(limits::kListItems))
      throw UsageError("--compare: at most " + std::to_string(limits::kListItems) + " layouts");
    if (!schedules.empty()) {
      // Only schedules the framework runs: its search's own list (restrict_to_framework).
      const std::vector<Schedule> runs = rq.search.schedules;
      rq.search.schedules.clear();
      for (const auto& item : split_list(schedules, "--schedules")) {
        const Schedule sch = parse_schedule(item);
        if (std::find(runs.begin(), runs.end(), sch) == runs.end()) {
          std::string allowed;
          for (Schedule r : runs) allowed += (allowed.empty() ? "" : ", ") + to_string(r);
          throw UsageError("--schedules " + item + ": " + to_string(s.work.framework) + " does not run it" +
                           (sch == Schedule::ZeroBubble
                                ? " (sixfold prices the one-stage ZB-H1, which is not in Megatron-LM or DeepSpeed; "
                                  "torchtitan runs only interleaved zero-bubble schedules)"
                                : std::string()) +
                           "; allowed for " + to_string(s.work.framework) + ": " + allowed);
        }
        rq.search.schedules.push_back(sch);
      }
    }
    const PlanResult res = [&] {
      Progress bar("plan: searching layouts");
      rq.progress = &bar;
      PlanResult r = plan(rq);
      rq.progress = nullptr;
      return r;
    }();
    const std::string header = scenario_header(s);
    if (!res.feasible()) return report_infeasible(s, rq, res);

    // With an export format, recommend the fastest layout that framework can express; planning for
    // torchtitan alone likewise (it has no ZeRO-1/2, and replicates only together with FSDP).
    const ExportFormat runs_as =
        format == ExportFormat::Yaml && s.work.framework == Framework::Torchtitan ? ExportFormat::Torchtitan : format;
    size_t pick = 0;
    std::string skipped_reason;
    if (runs_as != ExportFormat::Yaml) {
      for (; pick < res.ranked.size(); ++pick) {
        Scenario t = s;
        t.layout = res.ranked[pick].layout;
        try {
          export_plan(runs_as, t, Prediction{});
          break;
        } catch (const UsageError& e) {
          if (skipped_reason.empty()) skipped_reason = e.what();
        }
      }
      if (pick == res.ranked.size())
        throw UsageError(std::string("no layout that fits can be ") +
                         (format == ExportFormat::Yaml ? "run by " + to_string(s.work.framework) : "expressed") + ": " +
                         skipped_reason);
    }
    const Candidate& best = res.ranked[pick];
    s.layout = best.layout;
    const Prediction p = predict(s.model, s.hardware, s.work, s.layout);
    const auto families = compare_families(rq, res, best);

    // Layouts the user holds against the recommendation: where they rank and why they lose.
    struct Compared {
      Layout layout;
      Prediction prediction;
      size_t rank = 0;
      bool fits = false;
      std::string why;
    };
    std::vector<Compared> compared;
    for (const auto& spec : compare) {
      Compared c;
      c.layout = parse_layout_spec(spec, s.gpus, framework_overlaps_tp(s.work, rq.search), s.work.framework);
      validate_layout(s.model, c.layout, s.work, s.gpus);
      c.prediction = predict(s.model, s.hardware, s.work, c.layout);
      c.fits = c.prediction.peak_memory <= res.budget;
      c.rank = 1;
      for (const auto& r : res.ranked) c.rank += r.step_time < c.prediction.step_time ? 1 : 0;
      c.why = c.layout == best.layout ? "it is the recommended layout" : explain_difference(rq, best.layout, c.layout);
      compared.push_back(std::move(c));
    }

    if (json) {
      nlohmann::ordered_json out = scenario_json(s, false);  // the layouts come below, ranked
      out["memory_budget_bytes"] = res.budget;
      out["refined"] = res.refined;
      nlohmann::ordered_json rec;
      rec["layout"] = layout_json(best.layout);
      const nlohmann::ordered_json predicted = prediction_json(p);  // items() must not outlive it
      for (auto& [k, v] : predicted.items()) rec[k] = v;
      if (best.simulated_step_time > 0) rec["simulated_step_time_s"] = best.simulated_step_time;
      rec["prediction"]["expected_error"] = expected_error_json(s);
      out["recommended"] = rec;
      nlohmann::ordered_json cands = nlohmann::ordered_json::array();
      for (size_t i = 0; i < res.ranked.size() && i < size_t(top.value_or(5)); ++i) {
        nlohmann::ordered_json c;
        c["layout"] = layout_json(res.ranked[i].layout);
        c["step_time_s"] = res.ranked[i].step_time;
        if (res.ranked[i].simulated_step_time > 0) c["simulated_step_time_s"] = res.ranked[i].simulated_step_time;
        c["peak_memory_bytes"] = res.ranked[i].peak_memory;
        c["headroom_bytes"] = res.budget - res.ranked[i].peak_memory;
        cands.push_back(c);
      }
      out["candidates"] = cands;
      nlohmann::ordered_json fam = nlohmann::ordered_json::array();
      for (const auto& f : families) {
        nlohmann::ordered_json j;
        j["family"] = f.family;
        j["layout"] = f.best ? layout_json(f.best->layout) : nlohmann::ordered_json();
        j["step_time_s"] = f.best ? nlohmann::ordered_json(f.best->step_time) : nlohmann::ordered_json();
        j["why"] = f.why;
        fam.push_back(j);
      }
      out["families"] = fam;
      if (format != ExportFormat::Yaml) out["export_notes"] = export_notes(format, s);
      nlohmann::ordered_json cmp = nlohmann::ordered_json::array();
      for (const auto& c : compared) {
        nlohmann::ordered_json j;
        j["layout"] = layout_json(c.layout);
        j["prediction"] = prediction_summary_json(c.prediction);
        j["fits_budget"] = c.fits;
        j["rank"] = c.rank;
        j["why"] = c.why;
        cmp.push_back(j);
      }
      if (!compared.empty()) out["compared"] = cmp;
      out["evaluated"] = res.evaluated;
      out["memory_checked"] = res.memory_checked;
      out["enumerated"] = res.enumerated;
      out["pruned"] = res.pruned;
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "sixfold plan: " << header << "\n";
      std::printf("memory budget %.2f GiB per GPU; %lld meshes, %lld layouts, %lld memory-checked, %lld priced\n",
                  res.budget / kGiB, (long long)res.meshes, (long long)res.enumerated, (long long)res.memory_checked,
                  (long long)res.evaluated);
      if (res.refined > 0)
        std::printf("refined with the step simulator (%d candidates): the analytical top %d re-ranked by simulated "
                    "step time\n", res.refined, res.refined);
      if (pick > 0)
        std::cout << "note: the " << pick << " faster layout(s) cannot be "
                  << (format == ExportFormat::Yaml ? "run by " + to_string(s.work.framework) : "exported to " + export_format)
                  << " (" << skipped_reason << ")\n";
      std::cout << "\nrecommended: " << layout_summary(best.layout, rq.work, p.micro_batches) << "\n";
      print_prediction(std::cout, p);
      print_expected_error(std::cout, s, p.step_time);
      if (best.simulated_step_time > 0)
        std::cout << "simulated step time " << format_seconds(best.simulated_step_time) << " (closed form "
                  << format_seconds(best.step_time) << ")\n";
      if (res.refined > 0) {
        std::printf("\n%-4s %-72s %11s %11s %10s %10s\n", "rank", "layout", "step", "simulated", "peak GiB", "headroom");
      } else {
        std::printf("\n%-4s %-72s %11s %10s %10s\n", "rank", "layout", "step", "peak GiB", "headroom");
      }
      for (size_t i = 0; i < res.ranked.size() && i < size_t(top.value_or(5)); ++i) {
        const Candidate& c = res.ranked[i];
        const std::string d = describe(c.layout) + " " + to_string(c.layout.schedule) + " " + to_string(c.layout.dp_overlap);
        if (res.refined > 0) {
          const std::string sim = c.simulated_step_time > 0 ? format_seconds(c.simulated_step_time) : "-";
          std::printf("%-4zu %-72s %11s %11s %10.2f %10.2f\n", i + 1, d.c_str(), format_seconds(c.step_time).c_str(),
                      sim.c_str(), c.peak_memory / kGiB, (res.budget - c.peak_memory) / kGiB);
        } else {
          std::printf("%-4zu %-72s %11s %10.2f %10.2f\n", i + 1, d.c_str(), format_seconds(c.step_time).c_str(),
                      c.peak_memory / kGiB, (res.budget - c.peak_memory) / kGiB);
        }
      }
      std::cout << "\nwhy not another family:\n";
      for (const auto& f : families)
        std::cout << "  " << f.family << ": " << (f.best ? describe(f.best->layout) + ": " : std::string()) << f.why << "\n";
      if (!compared.empty()) std::cout << "\ncompared with the recommendation:\n";
      for (const auto& c : compared) {
        std::printf("  %s: step %s (%+.1f%%), peak %.2f GiB%s, would rank %zu of %zu: %s\n", layout_line(c.layout).c_str(),
                    format_seconds(c.prediction.step_time).c_str(), 100.0 * (c.prediction.step_time / p.step_time - 1.0),
                    c.prediction.peak_memory / kGiB, c.fits ? "" : " (over the budget)", c.rank, res.ranked.size(),
                    c.why.c_str());
      }
      if (explain) {
        std::cout << "\ndecision path:\n  " << res.meshes << " meshes (dp, tp, pp, cp, ep, etp, stage split) passed the "
                  << "structural constraints\n  " << res.enumerated << " layouts generated, " << res.memory_checked
                  << " memory-checked, " << res.evaluated << " fit the budget and were priced\n  pruned:\n";
        for (const auto& [k, v] : res.pruned) std::printf("    %-60s %lld\n", k.c_str(), (long long)v);
        std::cout << "  ranking: step time, then headroom, then the simpler layout\n";
        if (res.refined > 0)
          std::cout << "  refinement: the top " << res.refined << " re-priced with the step simulator and re-ranked by "
                    << "simulated step time\n";
      }
    }
    if (!report.empty()) {
      const SimulationResult sim = simulate_step(s.model, s.hardware, s.work, s.layout);
      ReportInput in = report_input("plan", s, p);
      in.simulation = &sim;
      in.budget = res.budget;
      in.budget_label = "budget";
      in.ranked_total = res.ranked.size();
      for (size_t i = 0; i < res.ranked.size() && i < 50; ++i) {
        const Candidate& c = res.ranked[i];
        Prediction cp;  // the throughput of a ranked layout, from its step time
        cp.step_time = c.simulated_step_time > 0 ? c.simulated_step_time : c.step_time;
        set_throughput(cp, s.model, s.hardware, s.work, c.layout);
        in.ranked.push_back({describe(c.layout) + " " + to_string(c.layout.schedule) + " " + to_string(c.layout.dp_overlap),
                             cp.step_time, c.peak_memory, cp.tokens_per_s_per_gpu});
      }
      write_html_report(in, report);
      if (!json) std::cout << "\nwrote " << report << " (HTML report)\n";
    }
    if (!export_path.empty()) {
      write_text_file(export_path, export_plan(format, s, p));
      if (!json) std::cout << "\nwrote " << export_path << " (" << to_string(format) << ")\n";
    } else if (format != ExportFormat::Yaml && !json) {
      std::cout << "\n" << export_plan(format, s, p);
    }
    // The Megatron flags carry the notes as comments; JSON has no comments, so say them here too.
    if (!json)
      for (const std::string& note : export_notes(format, s)) std::cout << "note (" << to_string(format) << "): " << note << "\n";
    return 0;
  }

  // The nearest global batches (multiples of a dp the GPU count allows) and node-multiple GPU
  // counts for which a layout exists, each with its fastest layout: what to change when the
  // layout rules leave nothing to price.
  struct Alternative {
    std::string flag;
    long long value;
    Candidate best;
  };
  static std::vector<Alternative> alternatives(const PlanRequest& rq) {
    std::vector<std::pair<long long, std::pair<std::string, long long>>> tries;  // (distance, (flag, value))
    const long long gb = rq.work.global_batch, gpus = rq.gpus;
    for (long long d = 1; d * d <= gpus; ++d) {
      if (gpus % d != 0) continue;
      for (long long dp : {d, gpus / d}) {
        const long long up = (gb + dp - 1) / dp * dp, down = gb / dp * dp;
        for (long long g : {up, down})
          if (g > 0 && g != gb && g <= limits::kGlobalBatch) tries.push_back({std::llabs(g - gb), {"--global-batch", g}});
      }
    }
    // Whole nodes around the GPU count (one to four nodes fewer or more).
    const long long node = std::max(1, rq.hardware.gpus_per_node);
    for (long long k = 1; k <= 4; ++k)
      for (long long g : {gpus / node * node - (k - 1) * node - (gpus % node == 0 ? node : 0), (gpus / node + k) * node})
        if (g > 0 && g != gpus && g <= limits::kGpus)
          tries.push_back({std::llabs(g - gpus) * std::max<long long>(1, gb / gpus), {"--gpus", g}});
    std::sort(tries.begin(), tries.end());
    tries.erase(std::unique(tries.begin(), tries.end()), tries.end());
    std::vector<Alternative> out;
    int attempts = 0;
    for (const auto& [distance, what] : tries) {
      if (out.size() >= 3 || attempts >= 12) break;
      PlanRequest alt = rq;
      alt.refine = 0;
      alt.closest_count = 1;
      if (what.first == "--gpus") alt.gpus = int(what.second);
      else alt.work.global_batch = what.second;
      ++attempts;
      const PlanResult r = plan(alt);
      if (r.feasible()) out.push_back({what.first, what.second, r.ranked.front()});
    }
    return out;
  }

  int report_infeasible(const Scenario& s, const PlanRequest& rq, const PlanResult& res) const {
    // Layouts that differ only in schedule or DP overlap need the same memory: five distinct ones.
    std::vector<Candidate> closest;
    std::set<std::string> listed;
    for (const auto& c : res.closest)
      if (closest.size() < 5 && listed.insert(describe(c.layout)).second) closest.push_back(c);
    // Nothing reached the memory check: the layout rules emptied the space. Name the rules that
    // rejected the most, and what nearby request would run.
    const bool rules = res.memory_checked == 0;
    std::vector<std::pair<Count, std::string>> reasons;
    for (const auto& [why, n] : res.pruned)
      if (why.rfind("memory", 0) != 0 && why.rfind("recompute not needed", 0) != 0) reasons.push_back({n, why});
    std::sort(reasons.rbegin(), reasons.rend());
    if (reasons.size() > 3) reasons.resize(3);
    const std::vector<Alternative> alts = rules ? alternatives(rq) : std::vector<Alternative>{};
    if (json) {
      nlohmann::ordered_json out;
      out["recommended"] = nullptr;
      out["memory_budget_bytes"] = res.budget;
      out["empty_because"] = rules ? "layout rules" : "memory budget";
      nlohmann::ordered_json rs = nlohmann::ordered_json::array();
      for (const auto& [n, why] : reasons) rs.push_back({{"rule", why}, {"rejected", n}});
      out["rules"] = rs;
      nlohmann::ordered_json cl = nlohmann::ordered_json::array();
      for (const auto& c : closest)
        cl.push_back({{"layout", layout_json(c.layout)}, {"peak_memory_bytes", c.peak_memory},
                      {"lacks_bytes", c.peak_memory - res.budget}});
      out["closest"] = cl;
      nlohmann::ordered_json al = nlohmann::ordered_json::array();
      for (const auto& a : alts)
        al.push_back({{"flag", a.flag}, {"value", a.value}, {"layout", layout_json(a.best.layout)},
                      {"step_time_s", a.best.step_time}, {"peak_memory_bytes", a.best.peak_memory}});
      out["alternatives"] = al;
      out["evaluated"] = res.evaluated;
      out["memory_checked"] = res.memory_checked;
      out["pruned"] = res.pruned;
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "sixfold plan: " << scenario_header(s) << "\n";
      if (rules) {
        std::printf("no layout of %d GPUs runs global batch %lld: every one breaks a layout rule before memory is checked\n",
                    rq.gpus, (long long)rq.work.global_batch);
        for (const auto& [n, why] : reasons) std::printf("  %-60s rejected %lld\n", why.c_str(), (long long)n);
        if (!alts.empty()) std::cout << "closest requests that run:\n";
        for (const auto& a : alts)
          std::printf("  %s %-8lld %-62s step %.3f s, peak %.2f GiB\n", a.flag.c_str(), a.value, describe(a.best.layout).c_str(),
                      a.best.step_time, a.best.peak_memory / kGiB);
      } else {
        std::printf("no layout fits the memory budget of %.2f GiB per GPU (%lld layouts memory-checked)\n",
                    res.budget / kGiB, (long long)res.memory_checked);
        std::cout << "closest layouts:\n";
        for (const auto& c : closest)
          std::printf("  %-70s needs %8.2f GiB, lacks %8.2f GiB\n", describe(c.layout).c_str(), c.peak_memory / kGiB,
                      (c.peak_memory - res.budget) / kGiB);
      }
    }
    return 1;
  }
};

Registrar reg("plan", "search every layout, recommend the fastest that fits, explain and export it", [](CLI::App& app) {
  auto cmd = std::make_shared<PlanCommand>();
  cmd->flags.add_to(app, false);
  char budget_help[160];
  std::snprintf(budget_help, sizeof budget_help,
                "memory per GPU a layout may use, with a unit, e.g. 78GiB (default: capacity / %.3f, room for "
                "the memory model's measured error; README)",
                1 + kMemoryUnderPredictionMargin);
  add_size(app, "--mem-budget", cmd->mem_budget, budget_help);
  add_count(app, "--threads", cmd->threads, 1, limits::kThreads, "search threads (default: all hardware threads)");
  add_count(app, "--refine", cmd->refine, 0, 1000,
            "re-price the analytical top K with the step simulator and re-rank them (default 8; 0: off)");
  add_count(app, "--top", cmd->top, 1, 1000000, "rows of the ranking table (default 5)");
  add_count(app, "--max-tp", cmd->max_tp, 1, limits::kGpus, "largest tensor-parallel size (default: GPUs per NVLink domain, the node but on rack-scale NVLink)");
  add_count(app, "--max-micro-batch", cmd->max_micro_batch, 1, limits::kGlobalBatch,
            "largest micro-batch tried (powers of two; default 64)");
  app.add_option("--schedules", cmd->schedules, "pipeline schedules to try, e.g. 1f1b,interleaved (default all)");
  app.add_flag("--no-hybrid-sharding", cmd->no_hybrid_sharding,
               "search ZeRO sharding over all of dp only, not also sharded within a node and replicated across "
               "nodes (--dp-shard: FSDP's HSDP, Megatron's distributed-optimizer instances, DeepSpeed's MiCS)");
  app.add_flag("--no-tp-overlap", cmd->no_tp_overlap,
               "price TP communication exposed (default: overlapped with the GEMMs on sequence-parallel layouts, "
               "as Megatron's --tp-comm-overlap and torchtitan's Async TP with --compile run it)");
  app.add_flag("--explain", cmd->explain, "print the decision path: counts per constraint, families");
  app.add_flag("--json", cmd->json, "machine-readable output (docs/plan-schema.md)");
  app.add_option("--compare", cmd->compare,
                 "a layout to hold against the recommendation, e.g. tp=8,pp=16,zero=1,sp (repeatable): its step "
                 "time, rank and why it loses");
  app.add_option("--export", cmd->export_path, "write the plan (or the --export-format) to this file");
  app.add_option("--report", cmd->report, "also write a self-contained HTML page of charts to FILE.html");
  app.add_option("--export-format", cmd->export_format, "yaml | megatron | deepspeed | torchtitan (default yaml)");
  return Action([cmd] { return cmd->run(); });
});

}  // namespace
}  // namespace sixfold::cli
