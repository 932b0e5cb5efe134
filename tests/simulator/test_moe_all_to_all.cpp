// MoE all-to-all across nodes goes through each GPU's own NIC, and hiding it behind another
// micro-batch's compute (Megatron's --overlap-moe-expert-parallel-comm, DeepSeek's DualPipe).
#include <doctest/doctest.h>

#include <algorithm>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/fit/run_facts.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_list_cost.hpp"
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

TEST_CASE("DeepEP dispatch: a token crosses the network once per node holding its experts") {
  GroupPlacement ep;
  ep.size = 32;
  ep.crosses_nodes = true;
  ep.ranks_per_node = 8;  // 4 nodes
  // One expert a token: it is on another node with probability 3/4, as in the all-to-all.
  CHECK(node_deduplicated_share(1, 256, ep) == doctest::Approx(3.0 / 4.0));
  // Top-8 of 256: the chance that a given other node holds none of the 8 is C(192, 8) / C(256, 8).
  double none = 1;
  for (int i = 0; i < 8; ++i) none *= (192.0 - i) / (256.0 - i);
  CHECK(node_deduplicated_share(8, 256, ep) == doctest::Approx(3 * (1 - none) / 8));
  CHECK(node_deduplicated_share(8, 256, ep) < 0.5 * 3.0 / 4.0);  // under half the all-to-all's copies
  // Every expert of the model chosen: every node is reached, once.
  CHECK(node_deduplicated_share(32, 32, ep) == doctest::Approx(3.0 / 32));
  // Inside one node nothing crosses the network.
  GroupPlacement node = ep;
  node.size = 8;
  node.crosses_nodes = false;
  CHECK(node_deduplicated_share(8, 256, node) == 0);
}

TEST_CASE("--moe-enable-deepep: a faster dispatch across nodes, the same inside one, in both predictors") {
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareProfile hw = load_hardware("h800-sxm-80g");
  Layout l;
  l.dp = 32;
  l.pp = 8;
  l.ep = 32;  // 4 nodes
  l.zero = 1;
  l.recompute = Recompute::Full;
  Workload w;
  w.seq = 4096;
  w.global_batch = 256;
  w.dtype = Dtype::FP8;
  validate_layout(m, l, w, 256);
  Workload deepep = w;
  deepep.deepep_dispatch = true;
  const Prediction a2a = predict(m, hw, w, l), dedup = predict(m, hw, deepep, l);
  CAPTURE(a2a.time.ep_comm);
  CAPTURE(dedup.time.ep_comm);
  CHECK(dedup.time.ep_comm < 0.6 * a2a.time.ep_comm);
  CHECK(dedup.time.compute == doctest::Approx(a2a.time.compute));
  CHECK(simulate_step(m, hw, deepep, l).step_time == doctest::Approx(dedup.step_time).epsilon(0.03));
  Layout one_node = l;
  one_node.ep = 8;
  CHECK(predict(m, hw, deepep, one_node).time.ep_comm == doctest::Approx(predict(m, hw, w, one_node).time.ep_comm));
  // A dense model or another framework: refused by name.
  Workload titan = deepep;
  titan.framework = Framework::Torchtitan;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, titan, 256), doctest::Contains("DeepEP dispatcher is Megatron's"), LayoutError);
  Layout dense_layout;
  dense_layout.dp = 8;
  CHECK_THROWS_WITH_AS(validate_layout(load_model("llama3-8b"), dense_layout, deepep, 8), doctest::Contains("needs an MoE model"),
                       LayoutError);
}

TEST_CASE("GB200 NVL72: expert parallelism inside the rack's NVLink domain, whatever the host size") {
  const ModelSpec m = load_model("deepseek-v3");
  HardwareProfile rack = load_hardware("gb200");
  Layout l;
  l.dp = 64;
  l.pp = 4;
  l.ep = 64;
  l.zero = 1;
  l.recompute = Recompute::Full;
  Workload w;
  w.seq = 4096;
  w.global_batch = 512;
  w.dtype = Dtype::FP8;
  validate_layout(m, l, w, 256);
  // Megatron's GB200 recipes launch 4 GPUs per host (GPUS_PER_NODE=4); a data file may say 8.
  HardwareProfile eight = rack;
  eight.gpus_per_node = 8;
  const Prediction p72 = predict(m, rack, w, l);
  CHECK(predict(m, eight, w, l).step_time == doctest::Approx(p72.step_time));
  // Cut the fabric at the host and the same all-to-alls cross the network: far slower.
  HardwareProfile hosts_only = eight;
  hosts_only.nvlink_domain = 0;
  const Prediction p8 = predict(m, hosts_only, w, l);
  CAPTURE(p72.time.ep_comm);
  CAPTURE(p8.time.ep_comm);
  CHECK(p8.time.ep_comm > 3 * p72.time.ep_comm);
  CHECK(simulate_step(m, rack, w, l).step_time == doctest::Approx(p72.step_time).epsilon(0.03));
}

TEST_CASE("MoE all-to-all overlap pairs each all-to-all with a compute part of the other micro-batch") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Layout l;
  Workload w;
  w.overlap_moe_ep_comm = true;
  const OpPricer pricer = OpPricer::of(hw, l, w);
  const double s = hw.overlap_slowdown;
  // Forward: attention 4, dispatch 3, experts 2, combine 3, after it 1. Backward (reversed): 1,
  // combine's gradient 3, experts 4, dispatch's gradient 3, attention 8.
  OpListCost f, b;
  f.ep_all_to_alls = b.ep_all_to_alls = 2;
  f.ep_all_to_all[0] = f.ep_all_to_all[1] = 3;
  b.ep_all_to_all[0] = b.ep_all_to_all[1] = 3;
  f.ep = b.ep = 6;
  f.ep_segment[0] = 4, f.ep_segment[1] = 2, f.ep_segment[2] = 1;
  b.ep_segment[0] = 1, b.ep_segment[1] = 4, b.ep_segment[2] = 8;
  f.compute = 7;
  b.compute = 13;
  overlap_ep(f, b, pricer);
  // Each transfer pays what its partner cannot cover and the hiding cost of the part it covers
  // (overlap::with_hiding_cost): the forward's dispatch under the backward's experts (4) and its
  // combine under the backward's attention (8) hide whole; the backward's combine gradient under
  // the forward's attention (4) hides whole, its dispatch gradient under the forward's experts
  // (2) leaves 1 exposed.
  auto cost = [&](double transfer, double window) {
    const double c = s * std::min(transfer, window);
    return c + std::max(0.0, transfer - (window + c));
  };
  CHECK(f.ep == doctest::Approx(cost(3, 4) + cost(3, 8)));
  CHECK(b.ep == doctest::Approx(cost(3, 4) + cost(3, 2)));
  CHECK(b.ep > f.ep);
  // Without the overlap nothing moves.
  OpListCost f2, b2;
  f2.ep = b2.ep = 6;
  f2.ep_all_to_alls = b2.ep_all_to_alls = 2;
  overlap_ep(f2, b2, OpPricer::of(hw, l, Workload{}));
  CHECK(f2.ep == 6);
  CHECK(b2.ep == 6);
}

TEST_CASE("EP overlap pairs only the steady phase: warm-up forwards and cool-down backwards keep their all-to-alls") {
  Layout l;
  l.pp = 8;
  l.schedule = Schedule::OneFOneB;
  // 1F1B: the first stage runs pp - 1 forwards alone.
  CHECK(ep_overlap_unpaired_share(l, 64) == doctest::Approx(7.0 / 64));
  // Interleaved (Megatron's warm-up (p-1)*2 + (v-1)*p chunks), over m*v chunks.
  l.vpp = 4;
  l.schedule = Schedule::Interleaved;
  CHECK(ep_overlap_unpaired_share(l, 128) == doctest::Approx(38.0 / 512));
  // No pipeline: forward i+1 beside backward i, so the first forward and the last backward are alone.
  Layout flat;
  CHECK(ep_overlap_unpaired_share(flat, 8) == doctest::Approx(1.0 / 8));
  CHECK(ep_overlap_unpaired_share(flat, 1) == doctest::Approx(1.0));
  // The blend: half unpaired keeps half of what the pairing hid.
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.overlap_moe_ep_comm = true;
  const OpPricer pricer = OpPricer::of(hw, flat, w);
  auto lists = [] {
    OpListCost f, b;
    f.ep_all_to_alls = b.ep_all_to_alls = 2;
    f.ep_all_to_all[0] = f.ep_all_to_all[1] = b.ep_all_to_all[0] = b.ep_all_to_all[1] = 3;
    f.ep = b.ep = 6;
    f.ep_segment[0] = 4, f.ep_segment[1] = 2, f.ep_segment[2] = 1;
    b.ep_segment[0] = 1, b.ep_segment[1] = 4, b.ep_segment[2] = 8;
    f.compute = 7;
    b.compute = 13;
    return std::pair{f, b};
  };
  auto [f0, b0] = lists();
  overlap_ep(f0, b0, pricer, 0);
  auto [fh, bh] = lists();
  overlap_ep(fh, bh, pricer, 0.5);
  auto [f1, b1] = lists();
  overlap_ep(f1, b1, pricer, 1);
  CHECK(f1.ep == doctest::Approx(6));
  CHECK(fh.ep == doctest::Approx(0.5 * 6 + 0.5 * f0.ep));
  CHECK(bh.ep == doctest::Approx(0.5 * 6 + 0.5 * b0.ep));
  // Fewer micro-batches per step leave more of a step's all-to-alls exposed, in both predictors.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  Layout ep;
  ep.dp = 8;
  ep.ep = 8;
  ep.zero = 1;
  Workload few = w, many = w;
  few.seq = many.seq = 4096;
  few.global_batch = 16;   // 2 micro-batches per rank
  many.global_batch = 128; // 16
  validate_layout(m, ep, few, 8);
  const Prediction pf = predict(m, hw, few, ep), pm = predict(m, hw, many, ep);
  CHECK(pf.time.ep_comm / pf.step_time > pm.time.ep_comm / pm.step_time);
  CHECK(simulate_step(m, hw, few, ep).step_time == doctest::Approx(pf.step_time).epsilon(0.03));
}

TEST_CASE("the ep_dispatcher and ep_overlap columns: stated values win, empty ones are the codebase's") {
  auto settings = [](const char* codebase, const char* dispatcher, const char* overlap) {
    return run_settings(parse_run_facts(codebase, "2026-08", "", "", "", "", dispatcher, overlap), 8, 1);
  };
  CHECK(settings("megatron-lm", "deepep", "1").deepep_dispatch);
  CHECK(settings("megatron-lm", "hybridep", "").deepep_dispatch);
  CHECK(settings("megatron-lm", "deepep", "1").overlap_moe_ep_comm);
  CHECK_FALSE(settings("megatron-lm", "", "").deepep_dispatch);  // Megatron's default dispatcher
  CHECK(settings("megatron-lm", "", "").filled_ep_dispatcher);
  CHECK_FALSE(settings("megatron-lm", "alltoall", "0").filled_ep_overlap);
  // DeepSeek's own kernels (report 3.2.2) and DualPipe, unless a row says otherwise.
  CHECK(settings("deepseek-internal", "", "").deepep_dispatch);
  CHECK(settings("deepseek-internal", "", "").overlap_moe_ep_comm);
  CHECK_FALSE(settings("deepseek-internal", "alltoall", "0").deepep_dispatch);
  CHECK_FALSE(settings("deepseek-internal", "alltoall", "0").overlap_moe_ep_comm);
  CHECK_THROWS_WITH(parse_run_facts("megatron-lm", "", "", "", "", "", "nccl", ""),
                    doctest::Contains("column 'ep_dispatcher': value 'nccl' is not alltoall, deepep, hybridep or empty"));
  CHECK_THROWS_WITH(parse_run_facts("megatron-lm", "", "", "", "", "", "", "yes"),
                    doctest::Contains("column 'ep_overlap'"));
}
