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
#include <string>

#include "common/error.hpp"
#include "executor/communicator.hpp"
#include "executor/run.hpp"
#include "executor/self_communicator.hpp"
#include "tiny_model.hpp"

using namespace sixfold;

namespace {

struct Case {
  Layout layout;
  bool moe = false;
  bool tied = false;
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
      {"tp2", with([](Case& c) { c.layout.tp = 2; })},
      {"tp2_sp", with([](Case& c) { c.layout.tp = 2; c.layout.sp = true; })},
      {"pp2_1f1b", with([](Case& c) { c.layout.pp = 2; c.layout.micro_batch = 1; })},
      {"pp2_tied", with([](Case& c) { c.layout.pp = 2; c.tied = true; })},
      {"pp2_interleaved", with([](Case& c) {
         c.layout.pp = 2; c.layout.vpp = 2; c.layout.schedule = Schedule::Interleaved; c.layout.micro_batch = 1; })},
      {"cp2", with([](Case& c) { c.layout.cp = 2; })},
      {"ep2_dp2_moe", with([](Case& c) { c.layout.dp = 2; c.layout.ep = 2; c.moe = true; })},
      {"ep4_dp4_moe_zero1", with([](Case& c) {
         c.layout.dp = 4; c.layout.ep = 4; c.layout.zero = 1; c.layout.micro_batch = 1; c.moe = true; })},
      {"recompute_selective_tp2_pp2", with([](Case& c) {
         c.layout.tp = 2; c.layout.pp = 2; c.layout.recompute = Recompute::Selective; })},
      {"recompute_full_tp2_pp2", with([](Case& c) { c.layout.tp = 2; c.layout.pp = 2; c.layout.recompute = Recompute::Full; })},
      {"tp2_pp2_dp2", with([](Case& c) { c.layout.tp = 2; c.layout.pp = 2; c.layout.dp = 2; c.layout.micro_batch = 1; })},
      {"cp2_tp2_dp2", with([](Case& c) { c.layout.cp = 2; c.layout.tp = 2; c.layout.dp = 2; c.layout.sp = true; })},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_equivalence <case> [float32|float64]\n");
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
    const Workload work = test::tiny_workload();
    Layout single;
    single.micro_batch = c.layout.micro_batch;
    const RunReport reference = run_plan_on(model, single, work, opt, std::make_unique<SelfCommunicator>());
    const RunReport run = run_plan(model, c.layout, work, opt);
    double worst = 0;
    for (size_t s = 0; s < reference.losses.size(); ++s)
      worst = std::max(worst, std::abs(run.losses[s] - reference.losses[s]) / std::abs(reference.losses[s]));
    if (run.rank == 0) {
      std::printf("%s (%s): %s\n", argv[1], to_string(opt.precision).c_str(), describe(c.layout).c_str());
      for (size_t s = 0; s < reference.losses.size(); ++s)
        std::printf("  step %2zu  single %.15f  layout %.15f\n", s, reference.losses[s], run.losses[s]);
      std::printf("  max relative difference %.3g (tolerance %.0e), step %.4f s\n", worst, tolerance, run.step_time);
    }
    return worst <= tolerance ? 0 : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "usage error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
