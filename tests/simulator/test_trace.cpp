// The Chrome trace of a simulated step: parses as JSON, every event is well formed, no two events
// overlap on one stream; and the seed's DP experiment (4 x H100), whose trace shows the overlap and
// whose timeline is checked against a golden file (SIXFOLD_UPDATE_GOLDEN=1 rewrites it after an
// intended change to the cost model; review the diff).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <cstdlib>

#include "models/model_zoo.hpp"
#include "simulator/step_simulator.hpp"
#include "simulator/io/trace_writer.hpp"

using namespace sixfold;

namespace {

const std::string kDpGolden = std::string(SIXFOLD_SOURCE_DIR) + "/tests/simulator/fixtures/seed_dp_timeline.json";

// The timeline of a simulated step as the golden file keeps it: every task's stream, kind and
// span in microseconds, in start order.
nlohmann::json timeline(const SimulationResult& r) {
  std::vector<const Task*> tasks;
  for (const Task& t : r.tasks) tasks.push_back(&t);
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task* a, const Task* b) { return a->start < b->start; });
  nlohmann::json events = nlohmann::json::array();
  for (const Task* t : tasks)
    events.push_back({{"stream", to_string(t->stream)}, {"kind", to_string(t->kind)}, {"mb", t->micro_batch},
                      {"start_us", t->start * 1e6}, {"end_us", t->end * 1e6}});
  return {{"step_time_us", r.step_time * 1e6}, {"events", events}};
}

struct Case {
  const char* model;
  Layout layout;
  Workload work;
};

std::vector<Case> trace_cases() {
  std::vector<Case> cases;
  {
    Case c{"gpt-1.7b", {}, {}};
    c.layout.dp = 2, c.layout.tp = 2, c.layout.pp = 4, c.layout.vpp = 2, c.layout.sp = true;
    c.layout.schedule = Schedule::Interleaved;
    c.layout.tp_overlap = true;
    c.work.seq = 2048, c.work.global_batch = 16;
    cases.push_back(c);
  }
  {
    Case c{"llama3-8b", {}, {}};
    c.layout.dp = 2, c.layout.tp = 2, c.layout.cp = 2, c.layout.pp = 2, c.layout.zero = 3;
    c.layout.schedule = Schedule::ZeroBubble;
    c.work.seq = 8192, c.work.global_batch = 8;
    cases.push_back(c);
  }
  {
    Case c{"mixtral-8x7b", {}, {}};
    c.layout.dp = 4, c.layout.tp = 2, c.layout.pp = 2, c.layout.ep = 4, c.layout.zero = 1, c.layout.sp = true;
    c.layout.dp_overlap = DpOverlap::PerLayer;
    c.layout.schedule = Schedule::GPipe;
    c.work.seq = 4096, c.work.global_batch = 16;
    cases.push_back(c);
  }
  return cases;
}

SimulationResult simulate_case(const Case& c, const HardwareProfile& hw) {
  const ModelSpec model = load_model(c.model);
  validate_layout(model, c.layout, c.work, 0);
  return simulate_step(model, hw, c.work, c.layout);
}

}  // namespace

TEST_CASE("trace: parses as JSON, events well formed, no overlap on a stream") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  for (const Case& c : trace_cases()) {
    CAPTURE(c.model);
    const SimulationResult r = simulate_case(c, hw);
    const auto path = std::filesystem::temp_directory_path() / "sixfold_test_trace.json";
    write_chrome_trace(r, c.model, path.string());
    std::ifstream in(path);
    const nlohmann::json trace = nlohmann::json::parse(in);  // throws when it is not JSON
    std::filesystem::remove(path);
    CHECK(trace == chrome_trace(r, c.model));  // the streamed file holds what the in-memory document does
    REQUIRE(trace.contains("traceEvents"));
    REQUIRE(trace["traceEvents"].is_array());

    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_stream;
    std::map<std::string, int> categories;
    int counters = 0;
    for (const auto& e : trace["traceEvents"]) {
      REQUIRE(e.contains("ph"));
      REQUIRE(e["name"].is_string());
      REQUIRE(e["pid"].is_number_integer());
      REQUIRE(e["tid"].is_number_integer());
      const std::string ph = e["ph"];
      CHECK((ph == "X" || ph == "C" || ph == "M"));
      if (ph == "X") {
        REQUIRE(e["ts"].is_number());
        REQUIRE(e["dur"].is_number());
        const double ts = e["ts"], dur = e["dur"];
        CHECK(ts >= 0);
        CHECK(dur > 0);
        CHECK(ts + dur <= r.step_time * 1e6 * (1 + 1e-9) + 1e-6);
        by_stream[{e["pid"], e["tid"]}].push_back({ts, ts + dur});
        categories[e["cat"]]++;
      } else if (ph == "C") {
        REQUIRE(e["ts"].is_number());
        REQUIRE(e["args"].is_object());
        for (const auto& [k, v] : e["args"].items()) CHECK(v.is_number());
        ++counters;
      }
    }
    CHECK(counters > 0);
    CHECK(categories["forward"] > 0);
    CHECK(categories["backward"] > 0);
    for (auto& [stream, spans] : by_stream) {
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) {
        CAPTURE(stream.first);
        CAPTURE(stream.second);
        CHECK(spans[i - 1].second <= spans[i].first + 1e-6);  // microseconds
      }
    }
    // One process per stage, and the streams each layout uses show up.
    CHECK(int(r.stages.size()) == c.layout.pp);
    if (c.layout.tp > 1) CHECK(categories["tp_comm"] > 0);
    if (c.layout.cp > 1) CHECK(categories["cp_comm"] > 0);
    if (c.layout.ep > 1) CHECK(categories["ep_comm"] > 0);
    if (c.layout.pp > 1) CHECK(categories["send_activation"] > 0);
    if (c.layout.zero == 3) CHECK(categories["param_gather"] > 0);
  }
}

TEST_CASE("seed DP experiment on 4 x H100: none slowest, and the trace shows the reductions overlapping backward") {
  // The seed paper's DP experiment: its small model (seed-tp) data-parallel on 4 GPUs of one node,
  // with the gradient all-reduce after backward (naive), per layer during backward, or bucketed.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const ModelSpec model = load_model("seed-tp");
  Workload w;
  w.seq = 512;
  w.global_batch = 64;
  std::map<DpOverlap, SimulationResult> runs;
  for (DpOverlap mode : {DpOverlap::None, DpOverlap::PerLayer, DpOverlap::Bucketed}) {
    Layout l;
    l.dp = 4;
    l.micro_batch = 8;
    l.dp_overlap = mode;
    l.bucket_bytes = 4 * kMiB;  // a few buckets for a model of 19M parameters
    validate_layout(model, l, w, 4);
    runs[mode] = simulate_step(model, hw, w, l);
  }
  // Golden timeline: the same events, in the same order, at the same times (to 0.01%).
  nlohmann::json now;
  for (auto& [mode, r] : runs) now[to_string(mode)] = timeline(r);
  if (std::getenv("SIXFOLD_UPDATE_GOLDEN")) {
    std::ofstream(kDpGolden) << now.dump(1) << "\n";
  } else {
    std::ifstream in(kDpGolden);
    REQUIRE_MESSAGE(in.good(), "missing golden file " << kDpGolden << " (SIXFOLD_UPDATE_GOLDEN=1 writes it)");
    const nlohmann::json golden = nlohmann::json::parse(in);
    for (auto& [mode, r] : runs) {
      const std::string name = to_string(mode);
      CAPTURE(name);
      const nlohmann::json& g = golden.at(name);
      const nlohmann::json& n = now.at(name);
      CHECK(n["step_time_us"].get<double>() == doctest::Approx(g["step_time_us"].get<double>()).epsilon(1e-4));
      REQUIRE(n["events"].size() == g["events"].size());
      for (size_t i = 0; i < g["events"].size(); ++i) {
        const auto &ge = g["events"][i], &ne = n["events"][i];
        CAPTURE(i);
        CHECK(ne["stream"] == ge["stream"]);
        CHECK(ne["kind"] == ge["kind"]);
        CHECK(ne["mb"] == ge["mb"]);
        CHECK(ne["start_us"].get<double>() == doctest::Approx(ge["start_us"].get<double>()).epsilon(1e-4));
        CHECK(ne["end_us"].get<double>() == doctest::Approx(ge["end_us"].get<double>()).epsilon(1e-4));
      }
    }
  }

  const Seconds naive = runs[DpOverlap::None].step_time;
  CHECK(runs[DpOverlap::PerLayer].step_time < naive);
  CHECK(runs[DpOverlap::Bucketed].step_time < naive);
  // The seed's order: naive slowest, then per-layer, bucketed fastest (fewer, larger all-reduces).
  CHECK(runs[DpOverlap::Bucketed].step_time < runs[DpOverlap::PerLayer].step_time);
  CHECK(runs[DpOverlap::PerLayer].breakdown.dp_comm < runs[DpOverlap::None].breakdown.dp_comm);

  for (auto& [mode, r] : runs) {
    CAPTURE(to_string(mode));
    Seconds backward_end = 0;
    int reductions = 0, overlapped = 0;
    for (const Task& t : r.tasks)
      if (t.kind == TaskKind::Backward) backward_end = std::max(backward_end, t.end);
    for (const Task& t : r.tasks) {
      if (t.kind != TaskKind::GradReduce) continue;
      ++reductions;
      overlapped += t.start < backward_end - 1e-12;
    }
    if (mode == DpOverlap::None) {
      CHECK(reductions == 1);
      CHECK(overlapped == 0);
    } else {
      CHECK(reductions > 1);
      CHECK(overlapped == reductions - 1);  // all but the first layer's (last to finish) run during backward
    }
    // The trace carries the same story: reduce events on the dp stream of stage 0.
    const nlohmann::json trace = chrome_trace(r, "dp");
    int dp_events = 0;
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["tid"] == int(Stream::DP)) ++dp_events;
    CHECK(dp_events == reductions);
  }
}
