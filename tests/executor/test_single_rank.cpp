#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.hpp"
#include "executor/runtime/run.hpp"
#include "simulator/hardware_profile.hpp"
#include "simulator/op_listing.hpp"
#include "tiny_model.hpp"

using namespace sixfold;
using namespace sixfold::test;

TEST_CASE("single rank: loss falls on the learnable synthetic task (float64)") {
  RunOptions opt;
  opt.steps = 30;
  opt.precision = Precision::Float64;
  opt.lr = 1e-2;
  Layout l;
  l.micro_batch = 4;
  auto report = run_plan(tiny_model(), l, tiny_workload(), opt);
  REQUIRE(report.losses.size() == 30);
  // Untrained: about log(vocab) = 4.85.
  CHECK(report.losses[0] == doctest::Approx(std::log(128.0)).epsilon(0.05));
  CHECK(report.losses.back() < 0.5 * report.losses[0]);
  CHECK(report.tokens_per_second > 0);
  // Timed under the program's id s0.dense.fwd.NN.qkv_proj: its three GEMMs per layer and micro-batch.
  const auto qkv = std::find_if(report.ops.begin(), report.ops.end(), [](const MeasuredOp& o) {
    return o.id.rfind("s0.dense.fwd.", 0) == 0 && o.name == "qkv_proj";
  });
  REQUIRE(qkv != report.ops.end());
  CHECK(qkv->op_class == "gemm");
  CHECK(report.op_steps == 29);  // the first (warm-up) step left out
  CHECK(qkv->calls == 29 * 4 * 2 * 3);  // steps x layers x micro-batches x GEMMs (q, k, v)
  CHECK(qkv->seconds > 0);
}

TEST_CASE("single rank: the ops run are the step program's, each timed, recompute re-runs under the backward's ids") {
  RunOptions opt;
  opt.steps = 1;
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    for (bool moe : {false, true}) {
      CAPTURE(to_string(r));
      CAPTURE(moe);
      Layout l;
      l.micro_batch = 2;
      l.recompute = r;
      const ModelSpec m = tiny_model(moe);
      const Workload w = tiny_workload();
      const RunReport report = run_plan(m, l, w, opt);
      std::set<std::string> listed, ran;
      for (const ListedOp& o : list_ops(m, load_hardware("cpu-dev"), w, l, expand_step_program(m, l, w))) listed.insert(o.id);
      for (const MeasuredOp& o : report.ops) {
        CHECK(o.seconds > 0);
        ran.insert(o.id);
      }
      CHECK(ran == listed);
      // The optimizer step is an op of the program (part dp); with one rank there is no DP collective.
      CHECK(std::count_if(report.ops.begin(), report.ops.end(), [](const MeasuredOp& o) {
              return o.id.rfind("s0.dp.step.", 0) == 0 && o.name == "optimizer_step";
            }) == 1);
      CHECK(report.outside_program.empty());
    }
}

TEST_CASE("single rank: float32 and float64 agree, MoE and GELU/LayerNorm variants train") {
  RunOptions opt;
  opt.steps = 3;
  Layout l;
  l.micro_batch = 2;  // 4 micro-batches: gradient accumulation
  opt.precision = Precision::Float32;
  auto f32 = run_plan(tiny_model(), l, tiny_workload(), opt);
  opt.precision = Precision::Float64;
  auto f64 = run_plan(tiny_model(), l, tiny_workload(), opt);
  for (int s = 0; s < 3; ++s) CHECK(f32.losses[s] == doctest::Approx(f64.losses[s]).epsilon(1e-4));
  auto moe = run_plan(tiny_model(true), l, tiny_workload(), opt);
  CHECK(std::isfinite(moe.losses.back()));
  CHECK(moe.losses.back() < moe.losses.front());
  ModelSpec gelu = tiny_model();
  gelu.activation = Activation::GELU;
  gelu.norm = NormKind::LayerNorm;
  gelu.tied_embeddings = true;
  auto g = run_plan(gelu, l, tiny_workload(), opt);
  CHECK(g.losses.back() < g.losses.front());
}

TEST_CASE("single rank: recompute modes give the same losses") {
  RunOptions opt;
  opt.steps = 2;
  opt.precision = Precision::Float64;
  Layout l;
  l.micro_batch = 4;
  auto none = run_plan(tiny_model(), l, tiny_workload(), opt);
  l.recompute = Recompute::Selective;
  auto selective = run_plan(tiny_model(), l, tiny_workload(), opt);
  l.recompute = Recompute::Full;
  auto full = run_plan(tiny_model(), l, tiny_workload(), opt);
  CHECK(selective.losses == none.losses);
  CHECK(full.losses == none.losses);
  // Recompute saves activation memory.
  const int act = int(MemoryCategory::Activations);
  CHECK(full.memory_per_rank[0].peak_by_category[act] < none.memory_per_rank[0].peak_by_category[act]);
  CHECK(selective.memory_per_rank[0].peak_by_category[act] < none.memory_per_rank[0].peak_by_category[act]);
}

TEST_CASE("single rank: weights, gradients and optimizer bytes are exact (fp32: 4, 4, 8 bytes per parameter)") {
  RunOptions opt;
  opt.steps = 1;
  Layout l;
  l.micro_batch = 8;
  const ModelSpec m = tiny_model();
  auto r = run_plan(m, l, tiny_workload(), opt);
  const double params = double(count_parameters(m).total);
  const auto& peak = r.memory_per_rank[0].peak_by_category;
  CHECK(peak[int(MemoryCategory::Weights)] == 4 * params);
  CHECK(peak[int(MemoryCategory::Gradients)] == 4 * params);
  CHECK(peak[int(MemoryCategory::Optimizer)] == 8 * params);
}

TEST_CASE("run_plan: clear usage errors") {
  RunOptions opt;
  Layout l;
  opt.backend = "tpu";
  CHECK_THROWS_AS(run_plan(tiny_model(), l, tiny_workload(), opt), UsageError);
  opt.backend = "cpu";
  l.dp = 2;  // needs two ranks, one launched
  try {
    run_plan(tiny_model(), l, tiny_workload(), opt);
    FAIL("expected a UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("mpirun -np 2") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_precision("bf16"), UsageError);
}
