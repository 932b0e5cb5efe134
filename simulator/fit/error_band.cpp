#include "simulator/fit/error_band.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/builtin_data.hpp"
#include "common/error.hpp"
#include "common/yaml_util.hpp"

namespace sixfold {

namespace {

// The GPU family a profile belongs to ("h100-96g-500w" -> "h100"): runs on a sibling part are
// more alike than runs on another generation.
std::string family(const std::string& gpu) { return gpu.substr(0, gpu.find('-')); }

}  // namespace

std::vector<ResidualRun> parse_residual_runs(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const YAML::Node list = root["runs"];
  if (!list || !list.IsSequence()) throw Error(source + ": field 'runs': missing or not a list");
  std::vector<ResidualRun> out;
  for (const YAML::Node& n : list) {
    const std::string where = source + ":" + std::to_string(n.Mark().line + 1) + ": ";
    ResidualRun r;
    try {
      r.id = n["id"].as<std::string>();
      r.framework = n["framework"].as<std::string>();
      r.gpu = n["gpu"].as<std::string>();
      r.gpus = n["gpus"].as<int>();
      r.abs_error_pct = n["abs_error_pct"].as<double>();
      if (n["codebase"]) r.codebase = n["codebase"].as<std::string>();
    } catch (const YAML::Exception&) {
      throw Error(where + "each run needs id, framework, gpu, gpus (an integer) and abs_error_pct (a number); codebase is optional");
    }
    if (r.gpus <= 0 || !std::isfinite(r.abs_error_pct) || r.abs_error_pct < 0)
      throw Error(where + "run '" + r.id + "': gpus must be positive and abs_error_pct finite and >= 0");
    out.push_back(r);
  }
  return out;
}

const std::vector<ResidualRun>& builtin_residual_runs() {
  static const std::vector<ResidualRun> runs = [] {
    const std::string path = "configs/error_bands/out_of_source.yaml";
    const auto text = builtin_text(path);
    return text ? parse_residual_runs(std::string(*text), path) : std::vector<ResidualRun>{};
  }();
  return runs;
}

std::optional<ErrorBand> expected_error(const std::vector<ResidualRun>& runs, Framework framework,
                                        const std::string& hardware, int gpus, const std::string& codebase) {
  if (int(runs.size()) < kMinRuns) return std::nullopt;
  // A codebase the residuals name nowhere borrows no framework's errors (see the header).
  const bool names_codebases = std::any_of(runs.begin(), runs.end(), [](const ResidualRun& r) { return !r.codebase.empty(); });
  const bool unmeasured_codebase =
      !codebase.empty() && names_codebases &&
      std::none_of(runs.begin(), runs.end(), [&](const ResidualRun& r) { return r.codebase == codebase; });
  const std::string fw = to_string(framework), fam = family(hardware);
  auto near_scale = [&](const ResidualRun& r) { return std::fabs(std::log2(double(r.gpus) / std::max(1, gpus))) <= 3.0; };
  // The keys a level matches a run on (and names in its basis); from most to least alike, the
  // first level with enough runs decides.
  struct Level {
    const char* what;
    bool by_framework, by_gpu, by_scale;
  };
  const Level levels[] = {
      {"same framework and GPU, GPU count within 8x", true, true, true},
      {"same framework and GPU", true, true, false},
      {"same framework", true, false, false},
      {"same GPU", false, true, false},
      {"all measured runs", false, false, false},
  };
  for (const Level& level : levels) {
    if (level.by_framework && unmeasured_codebase) continue;
    std::vector<double> errs;
    for (const ResidualRun& r : runs)
      if ((!level.by_framework || r.framework == fw) && (!level.by_gpu || family(r.gpu) == fam) &&
          (!level.by_scale || near_scale(r)))
        errs.push_back(r.abs_error_pct);
    if (int(errs.size()) < kMinRuns) continue;
    std::sort(errs.begin(), errs.end());
    // The error a new run will make is one more draw beside these n: it falls at or below the k-th
    // smallest with probability k / (n + 1) when the runs are exchangeable (the order-statistic
    // rank argument of split conformal prediction; Vovk, Gammerman and Shafer 2005, Lei et al.
    // 2018, arXiv 1604.04173). k = ceil(0.68 (n + 1)) is the smallest with at least 68%: the
    // plain 68th percentile of the n would promise 68% and deliver (0.68 n + 0.32) / (n + 1),
    // 64% of 9 runs.
    const size_t n = errs.size();
    const size_t k = std::min(n, size_t(std::ceil(kBandCoverage * double(n + 1) - 1e-9)));
    ErrorBand band;
    band.pct = errs[k - 1];
    band.runs = int(errs.size());
    // Only the keys the runs share with this one: "same framework (torchtitan, a100)" would say
    // A100 runs where the level took torchtitan's runs on any GPU.
    std::string keys = level.by_framework ? fw : "";
    if (level.by_gpu) keys += (keys.empty() ? "" : ", ") + fam;
    band.basis = level.what;
    if (!keys.empty()) band.basis += " (" + keys + ")";
    if (unmeasured_codebase) band.basis += "; no measured " + codebase + " run";
    return band;
  }
  return std::nullopt;
}

std::string describe(const ErrorBand& band) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "expect +-%.0f%% (%d similar measured runs: %s)", band.pct, band.runs, band.basis.c_str());
  return buf;
}

}  // namespace sixfold
