// Host dispatch against GPU time of an op list (overlap::dispatch_bound, HardwareProfile::
// dispatch_overlap) and the per-ring-step latency of intra-node collectives (CollectiveCurve::
// step_latency, NCCL's baseLat + nsteps x hwLat).
#include <doctest/doctest.h>

#include "simulator/collective_cost.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/overlap_rules.hpp"

using namespace sixfold;

TEST_CASE("dispatch overlap spans the additive model (0) and max(GPU, host) (1)") {
  CHECK(overlap::dispatch_bound(3e-3, 1e-3, 0.0) == doctest::Approx(4e-3));
  CHECK(overlap::dispatch_bound(3e-3, 1e-3, 1.0) == doctest::Approx(3e-3));
  CHECK(overlap::dispatch_bound(1e-3, 3e-3, 1.0) == doctest::Approx(3e-3));
  // Only the shorter of the two hides, whichever it is.
  CHECK(overlap::dispatch_bound(3e-3, 1e-3, 0.5) == doctest::Approx(3.5e-3));
  CHECK(overlap::dispatch_bound(1e-3, 3e-3, 0.5) == doctest::Approx(3.5e-3));
}

TEST_CASE("an op list's dispatch overhead shrinks with the profile's dispatch overlap") {
  HardwareProfile hw = load_hardware("a100-sxm-80g");
  hw.kernel_overhead = 50e-6;
  Layout layout;
  Op op;
  op.kind = OpKind::Memory;
  op.bytes = 1e9;  // ~0.5 ms on an A100: GPU-bound against 4 x 50 us of dispatch
  const std::vector<Op> ops(4, op);
  hw.dispatch_overlap = 0;
  const OpListCost additive = price_op_list(ops, 0, OpPricer(hw, layout, Dtype::FP16), false);
  CHECK(additive.overhead == doctest::Approx(4 * 50e-6));
  hw.dispatch_overlap = 0.6;
  const OpListCost partial = price_op_list(ops, 0, OpPricer(hw, layout, Dtype::FP16), false);
  CHECK(partial.overhead == doctest::Approx(0.4 * 4 * 50e-6));
  CHECK(partial.compute == doctest::Approx(additive.compute));
}

TEST_CASE("intra-node ring collectives pay a step latency per ring step") {
  HardwareProfile hw = load_hardware("a100-sxm-80g");
  hw.intra_node.latency = 10e-6;
  hw.intra_node.step_latency = 3e-6;
  auto group = [](int n) {
    GroupPlacement p;
    p.size = n;
    p.ranks_per_node = n;
    return p;
  };
  CHECK(intra_node_ring_steps(Collective::AllReduce, group(8)) == 14);
  CHECK(intra_node_ring_steps(Collective::AllGather, group(8)) == 7);
  CHECK(intra_node_ring_steps(Collective::ReduceScatter, group(2)) == 1);
  CHECK(intra_node_ring_steps(Collective::AllReduce, group(1)) == 0);
  // The latency part is what a tiny message costs: 10 us + 2(n-1) x 3 us.
  const Bytes tiny = 1;
  CHECK(collective_time(Collective::AllReduce, tiny, group(8), hw) == doctest::Approx(52e-6).epsilon(1e-3));
  CHECK(collective_time(Collective::AllReduce, tiny, group(2), hw) == doctest::Approx(16e-6).epsilon(1e-3));
  // Groups across nodes keep their one latency.
  GroupPlacement across = group(16);
  across.crosses_nodes = true;
  across.ranks_per_node = 8;
  CHECK(intra_node_ring_steps(Collective::AllReduce, across) == 0);
}

TEST_CASE("profiles without the new fields keep their old pricing") {
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  CHECK(hw.dispatch_overlap == 0);
  CHECK(hw.intra_node.step_latency == 0);
  CHECK(hw.provenance.count("dispatch_overlap") == 1);
  CHECK(hw.provenance.count("intra_node.step_latency") == 1);
}
