// Megatron's interleaved schedule overlaps pipeline sends with the next chunk's compute
// (overlap_p2p_comm); 1F1B and DeepSpeed block on them. Both predictors charge the same.
#include <doctest/doctest.h>

#include "models/model_zoo.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {
Layout pipelined(int vpp) {
  Layout l;
  l.tp = 4;
  l.pp = 4;
  l.dp = 4;
  l.sp = true;
  l.zero = 1;
  l.vpp = vpp;
  l.schedule = vpp > 1 ? Schedule::Interleaved : Schedule::OneFOneB;
  return l;
}
Workload work(bool overlap, Framework f = Framework::Megatron) {
  Workload w;
  w.seq = 4096;
  w.global_batch = 128;
  w.framework = f;
  w.overlap_p2p_comm = overlap;
  return w;
}
}  // namespace

TEST_CASE("pipeline sends: hidden behind the next chunk under Megatron's interleaved schedule, blocking otherwise") {
  const ModelSpec m = load_model("llama3-70b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  const Prediction on = predict(m, hw, work(true), pipelined(5));
  const Prediction off = predict(m, hw, work(false), pipelined(5));
  CAPTURE(on.time.pp_comm);
  CAPTURE(off.time.pp_comm);
  CHECK(p2p_overlapped(work(true), pipelined(5)));
  CHECK(on.time.pp_comm < 0.25 * off.time.pp_comm);  // what is left is the hiding cost
  CHECK(on.time.pp_comm > 0);
  CHECK(on.step_time < off.step_time);
  // The simulator plays the same rule: its step agrees with the closed form either way.
  for (bool overlap : {true, false}) {
    const Prediction p = predict(m, hw, work(overlap), pipelined(5));
    const SimulationResult s = simulate_step(m, hw, work(overlap), pipelined(5));
    CAPTURE(overlap);
    CHECK(s.step_time == doctest::Approx(p.step_time).epsilon(0.03));
  }
  // Non-interleaved 1F1B and DeepSpeed's pipeline engine block on every send.
  CHECK_FALSE(p2p_overlapped(work(true), pipelined(1)));
  CHECK(predict(m, hw, work(true), pipelined(1)).step_time == doctest::Approx(predict(m, hw, work(false), pipelined(1)).step_time));
  CHECK_FALSE(p2p_overlapped(work(true, Framework::DeepSpeed), pipelined(5)));
}

TEST_CASE("pipeline send overlap of a Megatron-LM row follows its date: the default from 2023-10-23") {
  auto overlap = [](const std::string& date) {
    return run_settings(parse_run_facts("megatron-lm", date, "flash", "", ""), 4, 1).overlap_p2p_comm;
  };
  CHECK_FALSE(overlap("2023-09"));
  CHECK(overlap("2024-07"));
  CHECK(overlap(""));
}
