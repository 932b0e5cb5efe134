// --emulate-rank: one rank of a bigger layout run alone, its groups as MPI_Comm_split would make
// them and its model-state bytes equal to the cost model's for its stage (as mpi_memory checks
// for real MPI runs).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "common/error.hpp"
#include "executor/comm/emulated_communicator.hpp"
#include "executor/runtime/process_groups.hpp"
#include "executor/runtime/run.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_listing.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("emulated rank: groups have the sizes and ranks of the real launch") {
  Layout l;
  l.tp = 2;
  l.pp = 2;
  l.dp = 2;
  // World rank 5 = tp 1 + 2 * (cp 0 + 1 * (dp 0 + 2 * pp 1)): last stage, second TP rank, first DP rank.
  auto world = make_emulated_world(l, 5);
  REQUIRE(world->size() == 8);
  REQUIRE(world->rank() == 5);
  ProcessGroups g = make_process_groups(l, *world);
  CHECK(g.me.tp == 1);
  CHECK(g.me.pp == 1);
  CHECK(g.me.dp == 0);
  CHECK(g.tp->size() == 2);
  CHECK(g.tp->rank() == 1);
  CHECK(g.pp->size() == 2);
  CHECK(g.pp->rank() == 1);
  CHECK(g.dp_cp->size() == 2);
  CHECK(g.dp_cp->rank() == 0);
  CHECK(g.embedding->size() == 2);
  CHECK(g.embedding->rank() == 1);
  CHECK(g.cp->size() == 1);
  CHECK_THROWS_AS(make_emulated_world(l, 8), UsageError);
}

TEST_CASE("emulated rank: collectives are local copies of the same buffers") {
  Layout l;
  l.tp = 4;
  auto world = make_emulated_world(l, 2);
  ProcessGroups g = make_process_groups(l, *world);
  float mine[2] = {1, 2}, all[8] = {};
  g.tp->all_gather(mine, all, 2, ElemType::F32);
  for (int r = 0; r < 4; ++r) {
    CHECK(all[2 * r] == 1);
    CHECK(all[2 * r + 1] == 2);
  }
  float full[8] = {0, 1, 2, 3, 4, 5, 6, 7}, block[2] = {};
  g.tp->reduce_scatter(full, block, 2, ElemType::F32);
  CHECK(block[0] == 4);  // tp rank 2's block
  CHECK(block[1] == 5);
  float sent[3] = {7, 8, 9}, got[3] = {};
  g.pp->send(sent, 3, ElemType::F32, 0, 11);
  g.pp->recv(got, 3, ElemType::F32, 0, 12);
  CHECK(got[2] == 9);
}

TEST_CASE("emulated rank: each stage's weights, gradients and optimizer bytes equal the cost model's") {
  Layout l;
  l.tp = 2;
  l.pp = 2;
  l.dp = 2;
  l.micro_batch = 1;
  const ModelSpec model = tiny_model();
  const Workload work = tiny_workload();
  const StepProgram prog = expand_step_program(model, l, work);
  const auto predicted = predict_memory(model, load_hardware("h100-sxm-80g"), work, l, prog);
  for (int rank : {0, 7}) {
    CAPTURE(rank);
    RunOptions opt;
    opt.steps = 1;
    opt.emulate_rank = rank;
    const RunReport r = run_plan(model, l, work, opt);
    CHECK(r.emulated_rank == rank);
    CHECK(r.world_size == 8);
    REQUIRE(r.memory_per_rank.size() == 1);
    const auto& m = r.memory_per_rank[0];
    const MemoryBreakdown& p = predicted[rank / 4];
    CHECK(m.peak_by_category[int(MemoryCategory::Weights)] == p.weights);
    CHECK(m.peak_by_category[int(MemoryCategory::Gradients)] == p.gradients);
    CHECK(m.peak_by_category[int(MemoryCategory::Optimizer)] == p.optimizer_states + p.master_weights);
    const double act = p.activations + p.moe_activations + p.logits;
    CHECK(std::abs(m.peak_by_category[int(MemoryCategory::Activations)] - act) <= 0.05 * act);
    CHECK(std::isfinite(r.losses[0]));
  }
}

TEST_CASE("emulated rank: MoE under TP needs SP (the EP peers include TP peers, each routing tokens of its own)") {
  Layout l;
  l.tp = 2;
  l.ep = 2;
  RunOptions opt;
  opt.steps = 1;
  opt.emulate_rank = 1;
  // Megatron refuses the layout itself; the executor refuses it for every framework.
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed}) {
    Workload w = tiny_workload();
    w.framework = f;
    try {
      run_plan(tiny_model(true), l, w, opt);
      FAIL("expected a UsageError");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(f == Framework::Megatron ? "only with sp" : "needs sequence parallelism") !=
            std::string::npos);
    }
  }
  l.sp = true;
  const RunReport r = run_plan(tiny_model(true), l, tiny_workload(), opt);
  CHECK(std::isfinite(r.losses[0]));
}

TEST_CASE("emulated rank: torchtitan's ZeRO-3 copies each gather out (FSDP2), timed as the program's copy-out op") {
  Layout l;
  l.dp = 4;
  l.zero = 3;
  l.micro_batch = 1;
  const ModelSpec model = tiny_model();
  Workload work = tiny_workload();
  work.framework = Framework::Torchtitan;
  RunOptions opt;
  opt.steps = 1;
  opt.emulate_rank = 2;
  const RunReport r = run_plan(model, l, work, opt);
  std::set<std::string> listed, ran;
  for (const ListedOp& o : list_ops(model, load_hardware("cpu-dev"), work, l, expand_step_program(model, l, work)))
    listed.insert(o.id);
  long gathers = 0, copies = 0;
  for (const MeasuredOp& o : r.ops) {
    ran.insert(o.id);
    if (o.name == "zero3_gather") gathers = o.calls;
    if (o.name == "zero3_gather_copy_out") {
      copies = o.calls;
      CHECK(o.seconds > 0);
    }
  }
  CHECK(ran == listed);
  CHECK(copies > 0);
  CHECK(copies == gathers);
  // FSDP1 gathers in place: no copy-out op, none run.
  work.fsdp1 = true;
  const RunReport one = run_plan(model, l, work, opt);
  for (const MeasuredOp& o : one.ops) CHECK(o.name != "zero3_gather_copy_out");
}
