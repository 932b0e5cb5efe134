// Speed of the closed-form cost model: one predict() in-process, and validate of the 1440
// single-node vTrain rows. Prints the figures for bench/RESULTS.md.
#include <chrono>
#include <cstdio>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/validation.hpp"

using namespace sixfold;
using Clock = std::chrono::steady_clock;

int main() {
  const ModelSpec m = load_model("llama3-70b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 8192;
  w.global_batch = 512;
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.vpp = 5;
  l.schedule = Schedule::Interleaved;
  l.dp = 4;
  l.sp = true;
  l.zero = 1;
  validate_layout(m, l, w, 128);
  const int n = 20000;
  double sink = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) sink += predict(m, hw, w, l).step_time;
  const double per = std::chrono::duration<double>(Clock::now() - t0).count() / n;
  std::printf("predict (llama3-70b, 128 x h100, tp8 pp4 vpp5 dp4): %.1f us per call (%d calls, checksum %.3f)\n", per * 1e6, n,
              sink / n);

  const CsvTable table = read_csv(std::string(SIXFOLD_DATA_DIR) + "/validation/vtrain_single_node.csv");
  t0 = Clock::now();
  const ValidationReport rep = validate_runs(table, {});
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("validate vtrain_single_node.csv: %d rows in %.3f s (iter_s MAPE %.2f%%)\n", rep.rows_scored, secs,
              rep.metrics.at("iter_s").mape_pct);
  return 0;
}
