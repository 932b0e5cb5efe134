// For every dense row of data/validation/published_runs.csv: the published layout fits the
// GPU under the memory model, and the planner's pick for the same model, GPUs and batch is
// predicted at least as fast. Rows whose layout the memory model puts over the GPU's capacity are
// reported (MESSAGE) rather than hidden; the memory model belongs to simulator/.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "planner/planner.hpp"
#include "simulator/cost_model.hpp"

using namespace sixfold;

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) { out.push_back(cell); cell.clear(); }
    else cell += c;
  }
  out.push_back(cell);
  return out;
}

std::optional<long long> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

}  // namespace

TEST_CASE("published dense runs: the layout fits and the planner's pick is at least as fast") {
  std::ifstream f(std::string(SIXFOLD_DATA_DIR) + "/validation/published_runs.csv");
  REQUIRE(f.good());
  std::string line;
  std::getline(f, line);
  const auto header = split_csv_line(line);
  int checked = 0, over_memory = 0, skipped = 0;
  while (std::getline(f, line)) {
    const auto cells = split_csv_line(line);
    if (cells.size() != header.size()) { ++skipped; continue; }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    if (!row["experts"].empty()) continue;  // MoE rows: not part of this check
    const char* ints[] = {"layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "seq", "gpus", "dp", "tp", "pp",
                          "cp", "micro_batch", "global_batch"};
    std::map<std::string, long long> n;
    // A row without a micro-batch: Megatron's default --micro-batch-size is 1.
    if (row["micro_batch"].empty() && !row["dp"].empty()) row["micro_batch"] = "1";
    std::string missing;
    for (const char* k : ints) {
      const auto v = number(row[k]);
      if (v) n[k] = *v;
      else missing += std::string(missing.empty() ? "" : ", ") + k + "='" + row[k] + "'";
    }
    if (!missing.empty()) { ++skipped; MESSAGE(row["id"] << ": skipped, not stated: " << missing); continue; }
    ModelSpec m;
    m.name = "published-" + row["id"];
    m.layers = int(n["layers"]); m.hidden = n["hidden"]; m.ffn = n["ffn"]; m.heads = int(n["heads"]);
    m.kv_heads = int(n["kv_heads"]); m.vocab = n["vocab"]; m.max_seq = int(n["seq"]);
    m.head_dim = int(m.hidden / m.heads);
    if (m.ffn == 4 * m.hidden) {  // GPT-style rows (Megatron GPT, BLOOM): LayerNorm and GELU
      m.norm = NormKind::LayerNorm;
      m.activation = Activation::GELU;
    }
    const HardwareProfile hw = load_hardware(row["gpu"]);
    Workload w;
    w.seq = n["seq"];
    w.global_batch = n["global_batch"];
    w.dtype = parse_dtype(row["dtype"]);
    Layout l;
    l.dp = int(n["dp"]); l.tp = int(n["tp"]); l.pp = int(n["pp"]); l.cp = int(n["cp"]);
    l.micro_batch = n["micro_batch"];
    l.sp = row["sp"] == "1" && l.tp > 1;
    const auto vpp = number(row["vpp"]);
    if (vpp && *vpp > 1) { l.vpp = int(*vpp); l.schedule = Schedule::Interleaved; }
    const auto zero = number(row["zero"]);
    std::vector<int> zeros = zero ? std::vector<int>{int(*zero)} : std::vector<int>{1, 3};
    std::vector<Recompute> recomputes;
    if (row["recompute"] == "unknown" || row["recompute"].empty())
      recomputes = {Recompute::None, Recompute::Selective, Recompute::Full};
    else
      recomputes = {parse_recompute(row["recompute"])};
    // torchtitan's "selective" activation checkpointing is op-level (as simulator/fit/row_fill.cpp reads it).
    if (row["recompute"] == "selective" && row["source"].find("torchtitan") != std::string::npos)
      recomputes = {Recompute::SelectiveOp};
    try {
      validate_layout(m, l, w, int(n["gpus"]));
    } catch (const LayoutError& e) {
      if (l.vpp > 1) { l.vpp = 1; l.schedule = Schedule::OneFOneB; }
      try {
        validate_layout(m, l, w, int(n["gpus"]));
        MESSAGE(row["id"] << ": vpp dropped (" << std::string(e.what()) << ")");
      } catch (const LayoutError& e2) {
        MESSAGE(row["id"] << ": published layout invalid here: " << std::string(e2.what()));
        ++skipped;
        continue;
      }
    }
    // The lightest stated-or-possible policy that fits: the published run evidently fitted.
    std::optional<Prediction> published;
    Bytes least = 1e300;
    for (int z : zeros)
      for (Recompute r : recomputes) {
        if (published) break;
        l.zero = z;
        l.recompute = r;
        const Prediction p = predict(m, hw, w, l);
        least = std::min(least, p.peak_memory);
        if (p.peak_memory <= hw.memory_capacity) published = p;
      }
    if (!published) {
      ++over_memory;
      MESSAGE(row["id"] << ": published layout " << describe(l) << " is predicted to need " << least / kGiB
                        << " GiB > " << hw.memory_capacity / kGiB << " GiB on " << hw.name << " (memory model)");
      continue;
    }
    PlanRequest rq;
    rq.model = m;
    rq.hardware = hw;
    rq.gpus = int(n["gpus"]);
    rq.work = w;
    rq.memory_budget = hw.memory_capacity;
    rq.threads = 2;
    const PlanResult res = plan(rq);
    INFO(row["id"] << ": published " << describe(l) << " " << published->step_time << " s");
    REQUIRE(res.feasible());
    CHECK(res.ranked.front().step_time <= published->step_time * (1 + 1e-9));
    ++checked;
  }
  MESSAGE("published dense rows checked: " << checked << ", over memory: " << over_memory << ", skipped: " << skipped);
  CHECK(checked >= 30);
}
