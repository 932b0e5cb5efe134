// Numerical equivalence of distributed layouts with the single-rank run, under mpirun.
//   mpi_equivalence <case> [float32|float64]
//   mpi_equivalence timeout_probe   (expects "communication timed out" from rank 0)
// Every rank first trains the single-rank reference on a world of one (SelfCommunicator), then
// the layout of <case> on the MPI world, and compares the 10 losses: within 1e-9 relative in
// float64, 1e-4 in float32. Exit 0 on success, 1 on a mismatch, 2 on a usage error.
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/error.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/backend/cpu/cpu_backend.hpp"
#include "executor/runtime/run.hpp"
#include "executor/comm/self_communicator.hpp"
#include "models/rank_mesh.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_listing.hpp"
#include "tiny_model.hpp"

using namespace sixfold;

namespace {

struct Case {
  Layout layout;
  bool moe = false;
  bool tied = false;
  bool squared_relu = false;  // Nemotron-4's MLP instead of SwiGLU
  Framework framework = Framework::Megatron;  // torchtitan: SP keeps the gathered inputs, layout copies
  int layers = 0;  // 0: the tiny model's
};

std::map<std::string, std::function<Case()>> cases() {
  auto with = [](std::function<void(Case&)> f) {
    return [f] {
      Case c;
      c.layout.micro_batch = 2;
      c.layout.dp_overlap = DpOverlap::None;
      f(c);
      return c;
    };
  };
  return {
      {"dp2", with([](Case& c) { c.layout.dp = 2; })},
      {"dp2_per_layer", with([](Case& c) { c.layout.dp = 2; c.layout.dp_overlap = DpOverlap::PerLayer; })},
      {"dp2_bucketed", with([](Case& c) { c.layout.dp = 2; c.layout.dp_overlap = DpOverlap::Bucketed; c.layout.bucket_bytes = 64 * 1024; })},
      {"zero1_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.zero = 1; })},
      {"zero2_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.zero = 2; })},
      {"zero3_dp4", with([](Case& c) { c.layout.dp = 4; c.layout.zero = 3; c.layout.micro_batch = 1; })},
      // Hybrid sharding: FSDP's HSDP (torchtitan) and Megatron's distributed-optimizer instances.
      {"hsdp_zero3_dp4_shard2", with([](Case& c) {
         c.layout.dp = 4; c.layout.dp_shard = 2; c.layout.zero = 3; c.layout.micro_batch = 1;
         c.framework = Framework::Torchtitan; c.layout.dp_overlap = DpOverlap::PerLayer; })},
      {"hsdp_zero3_cp2_dp2_shard1", with([](Case& c) {
         c.layout.cp = 2; c.layout.dp = 2; c.layout.dp_shard = 1; c.layout.zero = 3;
         c.framework = Framework::Torchtitan; c.layout.dp_overlap = DpOverlap::PerLayer; })},
      {"zero1_dp4_shard2_bucketed", with([](Case& c) {
         c.layout.dp = 4; c.layout.dp_shard = 2; c.layout.zero = 1; c.layout.micro_batch = 1;
         c.layout.dp_overlap = DpOverlap::Bucketed; })},
      {"tp2", with([](Case& c) { c.layout.tp = 2; })},
      {"tp2_sp", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; })},
      {"tp2_sp_torchtitan", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; c.framework = Framework::Torchtitan; })},
      // Async TP: the layout copies only the backward makes (their forward runs nothing).
      {"tp2_sp_torchtitan_async", with([](Case& c) {
         c.layout.tp = 2; c.layout.sp = true; c.layout.tp_overlap = true; c.framework = Framework::Torchtitan; })},
      {"pp2_1f1b", with([](Case& c) { c.layout.pp = 2; c.layout.micro_batch = 1; })},
      {"pp2_tied", with([](Case& c) { c.layout.pp = 2; c.tied = true; })},
      {"pp2_interleaved", with([](Case& c) {
         c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.micro_batch = 1; })},
      {"cp2", with([](Case& c) { c.layout.cp = 2; })},
      // 6 layers over pp 2 x vpp 2 with the embedding and the loss in the split: virtual stages of
      // 1, 2, 2 and 1 layers (Megatron's --account-for-embedding/loss-in-pipeline-split).
      {"pp2_interleaved_split", with([](Case& c) {
         c.layers = 6; c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.micro_batch = 1;
         c.layout.embedding_in_pipeline_split = c.layout.loss_in_pipeline_split = true; })},
      // Megatron's custom pipeline layout: 7 layers over pp 2 x vpp 2 as virtual stages of 3, 2, 2
      // and none (the last holds only the loss), so rank 0 builds 5 layers and rank 1 two.
      {"pp2_interleaved_layout", with([](Case& c) {
         c.layers = 7; c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.micro_batch = 1;
         c.layout.pipeline_layout = "Et*3|tt|tt|L"; })},
      {"ep2_dp2_moe", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.moe = true; })},
      {"tp2_sp_squared_relu", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; c.squared_relu = true; })},
      {"ep4_dp4_moe_zero1", with([](Case& c) {
         c.layout.dp = 4; c.layout.ep = 4; c.layout.zero = 1; c.layout.micro_batch = 1; c.moe = true; })},
      {"moe_ep2_dp2_tp2_sp", with([](Case& c) {
         c.layout.dp = 2; c.layout.ep = 2; c.layout.tp = 2; c.layout.sp = true; c.moe = true; })},
      {"moe_zero3_ep2_dp2_per_layer", with([](Case& c) {
         c.layout.dp = 2; c.layout.ep = 2; c.layout.zero = 3; c.layout.dp_overlap = DpOverlap::PerLayer; c.moe = true; })},
      // The experts' mesh (Megatron-Core's): EP over the CP peers, and EP over TP and DP peers at once.
      {"moe_ep2_cp2", with([](Case& c) { c.layout.cp = 2; c.layout.ep = 2; c.moe = true; })},
      {"moe_ep4_tp2_sp_dp2", with([](Case& c) {
         c.layout.tp = 2; c.layout.sp = true; c.layout.dp = 2; c.layout.ep = 4; c.moe = true; })},
      {"moe_ep2_dp2_cp2", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.layout.cp = 2; c.moe = true; })},
      {"pp4_gpipe", with([](Case& c) { c.layout.pp = 4; c.layout.schedule = Schedule::GPipe; c.layout.micro_batch = 1; })},
      {"pp4_1f1b_recompute_full_cp2", with([](Case& c) {
         c.layout.pp = 4; c.layout.cp = 2; c.layout.micro_batch = 1; c.layout.recompute = Recompute::Full; })},
      {"recompute_selective_tp2_pp2", with([](Case& c) {
         c.layout.tp = 2; c.layout.pp = 2; c.layout.recompute = Recompute::Selective; })},
      // The recomputed core attention runs its CP ring again; the program lists that exchange once.
      {"recompute_selective_cp2", with([](Case& c) { c.layout.cp = 2; c.layout.recompute = Recompute::Selective; })},
      {"recompute_selective_tp2_sp", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; c.layout.recompute = Recompute::Selective; })},
      {"recompute_full_moe_ep2_dp2", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.moe = true; c.layout.recompute = Recompute::Full; })},
      {"recompute_selective_moe_ep2_dp2_cp2", with([](Case& c) {
         c.layout.dp = 2; c.layout.ep = 2; c.layout.cp = 2; c.moe = true; c.layout.recompute = Recompute::Selective; })},
      {"moe_pp2_ep2_dp2", with([](Case& c) { c.layout.pp = 2; c.layout.dp = 2; c.layout.ep = 2; c.layout.micro_batch = 1; c.moe = true; })},
      {"zero2_tp2_sp_dp2", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; c.layout.dp = 2; c.layout.zero = 2; })},
      {"zero3_cp2_dp2_selective", with([](Case& c) {
         c.layout.cp = 2; c.layout.dp = 2; c.layout.zero = 3; c.layout.micro_batch = 1; c.layout.recompute = Recompute::Selective; })},
      {"moe_interleaved_pp2_ep2", with([](Case& c) {
         c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.ep = 2; c.layout.dp = 2;
         c.layout.micro_batch = 1; c.moe = true; })},
      {"recompute_full_tp2_pp2", with([](Case& c) { c.layout.tp = 2; c.layout.pp = 2; c.layout.recompute = Recompute::Full; })},
      // Megatron's block recompute: the first layer of each virtual stage recomputes, the others
      // keep their activations (8 layers over pp 2 x vpp 2: virtual stages of 2).
      {"recompute_block_pp2_interleaved", with([](Case& c) {
         c.layers = 8; c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.micro_batch = 1;
         c.layout.recompute = Recompute::Full; c.layout.recompute_num_layers = 1; })},
      {"recompute_block_tp2_sp_moe_ep2", with([](Case& c) {
         c.layout.tp = 2; c.layout.sp = true; c.layout.ep = 2; c.moe = true;
         c.layout.recompute = Recompute::Full; c.layout.recompute_num_layers = 2; })},
      {"tp2_pp2_dp2", with([](Case& c) { c.layout.tp = 2; c.layout.pp = 2; c.layout.dp = 2; c.layout.micro_batch = 1; })},
      {"cp2_tp2_dp2", with([](Case& c) { c.layout.cp = 2; c.layout.tp = 2; c.layout.dp = 2; c.layout.sp = true; })},
  };
}

// Weights, gradients and AdamW state per rank against the parameter count (fp32: 4, 4, 4+4 bytes
// per parameter), for layouts that only replicate or ZeRO-shard (tp = pp = ep = 1). ZeRO pads each
// parameter group to a multiple of the shard count, so a sharded category lies within
// [bytes * P / N, bytes * (P + groups * (N - 1)) / N].
bool memory_matches(const ModelSpec& model, const Layout& l, const RunReport& run, int element_bytes) {
  if (l.tp != 1 || l.pp != 1 || l.ep != 1) return true;
  const double P = double(count_parameters(model).total);
  const double N = double(l.shard_dp()) * l.cp;  // the ranks one shard spans (hybrid sharding: a shard group)
  const double groups = model.layers + 3;
  bool ok = true;
  auto check = [&](MemoryCategory c, double per_param, bool sharded) {
    const double lo = per_param * element_bytes * P / (sharded ? N : 1.0);
    const double hi = sharded ? per_param * element_bytes * (P + groups * (N - 1)) / N : lo;
    for (size_t r = 0; r < run.memory_per_rank.size(); ++r) {
      const double got = run.memory_per_rank[r].peak_by_category[int(c)];
      if (got < lo || got > hi + (l.zero >= 1 && !sharded ? per_param * element_bytes * groups * (N - 1) : 0)) {
        if (run.rank == 0)
          std::printf("  memory mismatch: rank %zu %s %.0f bytes, expected [%.0f, %.0f]\n", r, to_string(c).c_str(), got,
                      lo, hi);
        ok = false;
      }
    }
  };
  check(MemoryCategory::Weights, 1, l.zero >= 3);
  check(MemoryCategory::Gradients, 1, l.zero >= 2);
  check(MemoryCategory::Optimizer, 2, l.zero >= 1);
  return ok;
}

// The ops this rank ran are the ops `predict --ops` lists for its stage: the same ids, each run.
bool ran_the_program(const ModelSpec& model, const Layout& l, const Workload& work, const RunReport& run) {
  const int stage = rank_coordinates(l, run.rank).pp;
  std::set<std::string> listed, ran;
  for (const ListedOp& o : list_ops(model, load_hardware("cpu-dev"), work, l, expand_step_program(model, l, work)))
    if (o.stage == stage) listed.insert(o.id);
  for (const MeasuredOp& o : run.ops)
    if (o.calls > 0) ran.insert(o.id);
  if (listed == ran) return true;
  for (const auto& id : listed)
    if (!ran.count(id)) std::printf("  rank %d: the program's op %s was not run\n", run.rank, id.c_str());
  for (const auto& id : ran)
    if (!listed.count(id)) std::printf("  rank %d: ran %s, which predict --ops does not list\n", run.rank, id.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_equivalence <case> [float32|float64] [guarded]\n");
    return 2;
  }
  try {
    if (std::string(argv[1]) == "timeout_probe") {
      // Rank 0 enters an all-reduce that rank 1 never joins: rank 0 must report a timeout.
      auto world = make_world_communicator(2.0);
      double x = 1;
      if (world->rank() == 0) world->all_reduce_sum(&x, 1);
      return 0;
    }
    auto all = cases();
    auto it = all.find(argv[1]);
    if (it == all.end()) throw UsageError(std::string("unknown case ") + argv[1]);
    const Case c = it->second();
    RunOptions opt;
    opt.steps = 10;
    opt.precision = argc > 2 ? parse_precision(argv[2]) : Precision::Float64;
    opt.lr = 1e-2;
    opt.timeout_s = 60;
    const double tolerance = opt.precision == Precision::Float64 ? 1e-9 : 1e-4;
    ModelSpec model = test::tiny_model(c.moe);
    model.tied_embeddings = c.tied;
    if (c.squared_relu) model.activation = Activation::SquaredReLU;
    if (c.layers > 0) model.layers = c.layers;
    Workload work = test::tiny_workload();
    work.framework = c.framework;
    Layout single;
    single.micro_batch = c.layout.micro_batch;
    const RunReport reference = run_plan_on(model, single, work, opt, std::make_unique<SelfCommunicator>());
    // guarded: the layout's ranks keep their tensors on memory only the backend's calls can reach
    // (executor/backend/cpu/guarded_storage.hpp), with MPI moving it.
    const bool guarded = argc > 3 && std::string(argv[3]) == "guarded";
    const RunReport run =
        guarded ? run_plan_on(model, c.layout, work, opt, make_guarded_cpu_backend(make_world_communicator(opt.timeout_s)))
                : run_plan(model, c.layout, work, opt);
    double worst = 0;
    for (size_t s = 0; s < reference.losses.size(); ++s)
      worst = std::max(worst, std::abs(run.losses[s] - reference.losses[s]) / std::abs(reference.losses[s]));
    if (run.rank == 0) {
      std::printf("%s (%s%s): %s\n", argv[1], to_string(opt.precision).c_str(), guarded ? ", guarded memory" : "",
                  describe(c.layout).c_str());
      for (size_t s = 0; s < reference.losses.size(); ++s)
        std::printf("  step %2zu  single %.15f  layout %.15f\n", s, reference.losses[s], run.losses[s]);
      const auto& peak = run.memory_per_rank[0].peak_by_category;
      std::printf("  rank 0 peak bytes: weights %.0f gradients %.0f optimizer %.0f activations %.0f buffers %.0f\n",
                  peak[0], peak[1], peak[2], peak[3], peak[4]);
      std::printf("  max relative difference %.3g (tolerance %.0e), step %.4f s\n", worst, tolerance, run.step_time);
    }
    const bool memory_ok =
        memory_matches(model, c.layout, run, opt.precision == Precision::Float64 ? 8 : 4);
    const bool ops_ok = ran_the_program(model, c.layout, work, run) && ran_the_program(model, single, work, reference);
    if (run.rank == 0) std::printf("  ops: %zu of the program run on rank 0, the same set as predict --ops: %s\n",
                                   run.ops.size(), ops_ok ? "yes" : "no (above)");
    return worst <= tolerance && memory_ok && ops_ok ? 0 : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "usage error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
