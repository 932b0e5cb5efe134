// MoE all-to-all across nodes goes through each GPU's own NIC, and hiding it behind another
// micro-batch's compute (Megatron's --overlap-moe-expert-parallel-comm, DeepSeek's DualPipe).
#include <doctest/doctest.h>

#include "models/model_zoo.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

TEST_CASE("all-to-all across nodes: the share for other nodes leaves through this GPU's NIC") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  GroupPlacement ep;
  ep.size = 32;
  ep.crosses_nodes = true;
  ep.ranks_per_node = 8;
  const Bytes message = 128.0 * kMiB;
  const Seconds t = collective_time(Collective::AllToAll, message, ep, hw);
  const Bytes off_node = message * 24.0 / 32.0;
  // At least the off-node bytes at the NIC's bandwidth, far above a ring collective's time, which
  // spreads the node boundary over all eight NICs.
  CHECK(t >= off_node / hw.inter_node.peak_busbw);
  CHECK(t < 1.2 * off_node / hw.inter_node.peak_busbw + 1e-3);
  CHECK(t > 4 * collective_time(Collective::AllGather, message, ep, hw));
  // Inside one node it is the measured NCCL table's.
  GroupPlacement node = ep;
  node.size = 8;
  node.crosses_nodes = false;
  CHECK(collective_time(Collective::AllToAll, message, node, hw) < t);
}

TEST_CASE("--overlap-moe-expert-parallel-comm hides the all-to-all behind compute, in both predictors") {
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  l.dp = 32;
  l.ep = 8;  // inside a node: the all-to-all is shorter than the compute it hides behind
  l.zero = 1;
  Workload w;
  w.seq = 4096;
  w.global_batch = 256;
  validate_layout(m, l, w, 32);
  const Prediction off = predict(m, hw, w, l);
  Workload on_w = w;
  on_w.overlap_moe_ep_comm = true;
  const Prediction on = predict(m, hw, on_w, l);
  CAPTURE(off.time.ep_comm);
  CAPTURE(on.time.ep_comm);
  CHECK(off.time.ep_comm > 0);
  CHECK(on.time.ep_comm < 0.5 * off.time.ep_comm);  // what is left is the hiding cost
  CHECK(on.step_time < off.step_time);
  CHECK(simulate_step(m, hw, on_w, l).step_time == doctest::Approx(on.step_time).epsilon(0.03));
  // DeepSeek-V3's rows: DualPipe, from the codebase table.
  CHECK(run_settings(parse_run_facts("deepseek-internal", "2024-12", "", "", ""), 16, 1).overlap_moe_ep_comm);
  CHECK_FALSE(run_settings(parse_run_facts("megatron-lm", "2026-08", "", "", ""), 8, 1).overlap_moe_ep_comm);
}
