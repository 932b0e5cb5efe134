#include "tests/fuzz/fuzz_targets.hpp"

#include <algorithm>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/yaml_util.hpp"
#include "models/hf_config.hpp"
#include "models/model_zoo.hpp"
#include "models/step_program.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/io/kineto_trace.hpp"
#include "simulator/io/scenario.hpp"
#include "simulator/fit/validation.hpp"
#include "tools/cli/cli.hpp"

namespace sixfold::fuzz {

namespace {

const HardwareProfile& h100() {
  static const HardwareProfile hw = load_hardware("h100-sxm-80g");
  return hw;
}

// Prices a scenario that passed its checks: the step program and the cost model must take any
// layout validate_layout lets through.
void price(const ModelSpec& m, const HardwareProfile& hw, const Workload& w, const Layout& l, int gpus) {
  validate_layout(m, l, w, gpus);
  predict(m, hw, w, l);
}

}  // namespace

void plan_yaml(const std::string& input) {
  try {
    const Scenario s = parse_scenario(parse_yaml(input, "fuzz-plan.yaml"));
    price(s.model, s.hardware, s.work, s.layout, s.gpus);
  } catch (const Error&) {
  }
}

void model_yaml(const std::string& input) {
  try {
    const ModelSpec m = parse_model_yaml(input, "fuzz-model.yaml");
    count_parameters(m);
    Workload w;
    w.seq = m.max_seq > 0 ? std::min(m.max_seq, 4096) : 2048;
    w.global_batch = 1;
    price(m, h100(), w, Layout{}, 1);
  } catch (const Error&) {
  }
}

void hardware_yaml(const std::string& input) {
  try {
    const HardwareProfile hw = parse_hardware(input, "fuzz-hardware.yaml");
    Workload w;
    w.seq = 2048;
    w.global_batch = 8;
    Layout l;
    l.dp = 8;
    price(load_model("seed-tp"), hw, w, l, 8);
  } catch (const Error&) {
  }
  try {
    std::string name;
    HardwareProfile hw = h100();
    apply_overrides(hw, parse_cluster_overrides(input, "fuzz-cluster.yaml", &name));
  } catch (const Error&) {
  }
}

void hf_config(const std::string& input) {
  try {
    const ModelSpec m = parse_hf_config(input, "fuzz-config.json", "fuzz");
    count_parameters(m);
    Workload w;
    w.seq = m.max_seq > 0 ? std::min(m.max_seq, 4096) : 2048;
    price(m, h100(), w, Layout{}, 1);
  } catch (const Error&) {
  }
}

void validation_csv(const std::string& input) {
  try {
    const CsvTable table = parse_csv(input, "fuzz-runs.csv");
    for (size_t r = 0; r < table.rows.size(); ++r)
      for (const auto& name : table.header) table.field(r, name);
  } catch (const Error&) {
  }
}

void validation_rows(const std::string& input) {
  try {
    const CsvTable table = parse_csv(input, "fuzz-runs.csv");
    // Scoring a row can search layouts for what it leaves unstated: a few rows per input.
    if (table.rows.size() <= 2) validate_runs(table, ValidationOptions{});
  } catch (const Error&) {
  }
}

void kineto_trace(const std::string& input) {
  try {
    const KinetoTrace trace = parse_kineto_trace(input, "fuzz-trace.json");
    calibrate_from_kineto(trace, h100(), "2025-01-01");
  } catch (const Error&) {
  }
}

void cli_args(const std::string& input) {
  std::vector<std::string> args{"sixfold"};
  std::string arg;
  for (char c : input) {
    if (c == '\n') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
    if (args.size() > 32 || arg.size() > 256) return;
  }
  if (!arg.empty()) args.push_back(arg);
  // Nothing that writes files, trains, benchmarks this machine or starts thousands of threads.
  for (const auto& a : args) {
    if (a == "run" || a == "calibrate") return;
    for (const char* bad : {"--export", "--trace", "--report", "-o", "--output", "--threads"})
      if (a.rfind(bad, 0) == 0) return;
  }
  // decide plans every cell of its grid: the default 5 x 4 x 4 grid is 80 full searches (3.4 s in
  // Release, past the 30 s limit under ASan and libFuzzer's coverage). Its flags are fuzzed on
  // grids of at most 2 x 2 x 2 cells.
  if (args.size() > 1 && std::string(args[1].c_str()) == "decide") {
    int narrowed = 0;
    for (size_t i = 1; i + 1 < args.size(); ++i)
      for (const char* axis : {"--models", "--hardware", "--gpus"})
        if (args[i] == axis) {
          if (std::count(args[i + 1].begin(), args[i + 1].end(), ',') > 1) return;
          ++narrowed;
        }
    if (narrowed < 3) return;
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  cli::run_cli(int(argv.size()), argv.data());
}

const std::vector<NamedTarget>& targets() {
  static const std::vector<NamedTarget> all = {
      {"plan_yaml", plan_yaml},           {"model_yaml", model_yaml}, {"hardware_yaml", hardware_yaml},
      {"hf_config", hf_config},           {"validation_csv", validation_csv}, {"validation_rows", validation_rows},
      {"kineto_trace", kineto_trace},     {"cli_args", cli_args}};
  return all;
}

}  // namespace sixfold::fuzz
