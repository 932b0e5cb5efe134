// Hybrid sharding (Layout::dp_shard: FSDP's HSDP, Megatron's distributed-optimizer instances,
// DeepSpeed's MiCS): states sharded over a shard group, gradients reduce-scattered within it and
// all-reduced across its replicas, each collective priced where its group sits.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "models/layout.hpp"
#include "models/model_zoo.hpp"
#include "simulator/collective_cost.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/dp_traffic.hpp"
#include "simulator/hardware_profile.hpp"
#include "models/step_program.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {
Layout fsdp(int dp, int dp_shard) {
  Layout l;
  l.dp = dp;
  l.dp_shard = dp_shard;
  l.zero = 3;
  l.micro_batch = 2;
  l.recompute = Recompute::Full;
  return l;
}

Workload torchtitan() {
  Workload w;
  w.seq = 4096;
  w.global_batch = 256;
  w.framework = Framework::Torchtitan;
  return w;
}

// An A100 node with 400 Gb/s of network (AWS p4de): the network is what hybrid sharding spares.
HardwareProfile slow_network() {
  HardwareProfile hw = load_hardware("a100-sxm-80g");
  apply_overrides(hw, load_cluster_overrides("aws-p4de", nullptr));
  return hw;
}
}  // namespace

TEST_CASE("hybrid sharding: states shard over the shard group only, the replicas hold the same shard") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = slow_network();
  const Prediction full = predict(m, hw, torchtitan(), fsdp(128, 0));
  const Prediction hybrid = predict(m, hw, torchtitan(), fsdp(128, 8));
  // 16 times the sharded states: 128 ranks per shard against 8.
  CHECK(hybrid.memory.master_weights == doctest::Approx(16 * full.memory.master_weights).epsilon(0.01));
  CHECK(hybrid.memory.optimizer_states == doctest::Approx(16 * full.memory.optimizer_states).epsilon(0.01));
  CHECK(hybrid.memory.gradients == doctest::Approx(16 * full.memory.gradients).epsilon(0.01));
  // dp_shard equal to dp is no hybrid sharding at all.
  CHECK(predict(m, hw, torchtitan(), fsdp(128, 128)).step_time == doctest::Approx(full.step_time));
}

TEST_CASE("hybrid sharding: gathers and reduce-scatters stay in the node, each shard all-reduces across its replicas") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = slow_network();
  const Layout l = fsdp(128, 8);
  const StepProgram prog = expand_step_program(m, l, torchtitan());
  const DpOps d = dp_ops(m, torchtitan(), l, prog.stages[0], prog.micro_batches);
  const DpOps whole = dp_ops(m, torchtitan(), fsdp(128, 0), prog.stages[0], prog.micro_batches);
  const DpOp* reduce = nullptr;
  const DpOp* replicas = nullptr;
  for (const DpOp& o : d.ops) {
    if (std::string(o.op.name) == "grad_reduce") reduce = &o;
    if (std::string(o.op.name) == "grad_replica_reduce") replicas = &o;
    if (o.op.collective == Collective::AllGather) CHECK(o.op.group_size == 8);
  }
  REQUIRE(reduce);
  REQUIRE(replicas);
  CHECK(reduce->op.group_size == 8);
  CHECK(reduce->op.collective == Collective::ReduceScatter);
  CHECK(replicas->op.group == Group::DPReplica);
  CHECK(replicas->op.collective == Collective::AllReduce);
  CHECK(replicas->op.group_size == 16);
  CHECK(replicas->per_step == reduce->per_step);
  // Each replica all-reduce carries the eighth of a reduce-scatter's gradients its rank keeps.
  CHECK(replicas->op.message == doctest::Approx(reduce->op.message / 8));
  for (const DpOp& o : whole.ops) CHECK(std::string(o.op.name) != "grad_replica_reduce");
  // Where they sit: the shard group within a node, the replicas one per node.
  CHECK_FALSE(place_gradient_group(l, hw.scale_up_gpus()).crosses_nodes);
  const GroupPlacement across = place_group(Group::DPReplica, l, hw.scale_up_gpus());
  CHECK(across.crosses_nodes);
  CHECK(across.ranks_per_node == 1);
  CHECK(place_gradient_group(fsdp(128, 0), hw.scale_up_gpus()).crosses_nodes);
  // The closed form and the step simulator price the same traffic.
  const Prediction closed = predict(m, hw, torchtitan(), l);
  CHECK(simulate_step(m, hw, torchtitan(), l).step_time == doctest::Approx(closed.step_time).epsilon(0.03));
  // The parameter gathers no longer cross the 400 Gb/s network; the gradients cross it once, in the
  // replicas' all-reduce (in fp32, torchtitan's reduce dtype, about the bytes full sharding's gathers
  // and reduce-scatter move, so the step is no faster here).
  const DpTraffic hybrid_t = dp_traffic(m, hw, torchtitan(), l, prog.stages[0]);
  const DpTraffic full_t = dp_traffic(m, hw, torchtitan(), fsdp(128, 0), prog.stages[0]);
  CHECK(hybrid_t.gather_pass < full_t.gather_pass / 3);
  CHECK(hybrid_t.reduction > full_t.reduction);
}

TEST_CASE("hybrid sharding: dp_shard divides dp, shards ZeRO state, as each framework runs it, dense models only") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w = torchtitan();
  auto check = [&](const Layout& l, const Workload& work, const ModelSpec& model, const char* constraint) {
    CAPTURE(constraint);
    try {
      validate_layout(model, l, work, l.gpus());
      FAIL("accepted");
    } catch (const LayoutError& e) {
      CHECK(std::string(e.what()).find(constraint) != std::string::npos);
    }
  };
  check(fsdp(128, 6), w, m, "dp_shard divides dp");
  Layout ddp = fsdp(128, 8);
  ddp.zero = 0;
  check(ddp, w, m, "hybrid sharding as the framework runs it");
  Layout zero1 = fsdp(128, 8);
  zero1.zero = 1;
  check(zero1, w, m, "hybrid sharding as the framework runs it");  // torchtitan: FSDP only
  w.framework = Framework::Megatron;
  CHECK_NOTHROW(validate_layout(m, zero1, w, 128));  // --num-distributed-optimizer-instances
  check(fsdp(128, 8), w, m, "hybrid sharding as the framework runs it");
  w.framework = Framework::DeepSpeed;
  CHECK_NOTHROW(validate_layout(m, fsdp(128, 8), w, 128));  // MiCS
  w.framework = Framework::DeepSpeedLegacy;
  check(fsdp(128, 8), w, m, "hybrid sharding as the framework runs it");
  Workload moe_w = torchtitan();
  moe_w.global_batch = 256;
  check(fsdp(128, 8), moe_w, load_model("mixtral-8x7b"), "hybrid sharding is priced for dense models");
}
