// The planner: every enumerated layout is valid, the fast step time equals predict(), no
// recommendation exceeds the budget (random models and clusters), 1 and 2 threads agree, and an
// infeasible request reports the closest layouts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "common/error.hpp"
#include "models/model_zoo.hpp"
#include "planner/decision_table.hpp"
#include "planner/planner.hpp"
#include "simulator/cost_model.hpp"

using namespace sixfold;

TEST_CASE("every enumerated layout passes validate_layout and the counts add up") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 32;
  PruneCounts pruned;
  const auto layouts = enumerate_layouts(m, w, 16, 8, SearchOptions{}, pruned);
  REQUIRE(layouts.size() > 1000);
  for (const Layout& l : layouts) CHECK_NOTHROW(validate_layout(m, l, w, 16));
  CHECK(pruned["tp at most --max-tp (default: GPUs per NVLink domain)"] == 1);  // tp = 16
  // Interleaved layouts exist (pp 2, 16 layers per stage) and gpipe is counted as dominated.
  bool interleaved = false;
  for (const Layout& l : layouts) interleaved = interleaved || l.schedule == Schedule::Interleaved;
  CHECK(interleaved);
  CHECK(pruned["gpipe dominated by 1f1b (same time, more memory)"] > 0);
  // Each framework's search (restrict_to_framework) enumerates only what it runs.
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed, Framework::DeepSpeedLegacy, Framework::Torchtitan}) {
    Workload fw = w;
    fw.framework = f;
    SearchOptions o;
    restrict_to_framework(o, f);
    PruneCounts p;
    const auto mine = enumerate_layouts(m, fw, 16, 8, o, p);
    REQUIRE(!mine.empty());
    for (const Layout& l : mine) CHECK_NOTHROW(validate_layout(m, l, fw, 16));
  }
}

TEST_CASE("MoE meshes enumerate ep and etp within ep*etp | tp*cp*dp") {
  const ModelSpec m = load_model("mixtral-8x7b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  PruneCounts pruned;
  const auto meshes = enumerate_meshes(m, w, 16, 8, SearchOptions{}, pruned);
  bool ep8 = false;
  for (const Mesh& mesh : meshes) {
    CHECK((mesh.tp * mesh.cp * mesh.dp) % (mesh.ep * mesh.etp) == 0);
    CHECK(m.moe.num_experts % mesh.ep == 0);
    ep8 = ep8 || mesh.ep == 8;
  }
  CHECK(ep8);
}

TEST_CASE("the planner's fast step time equals predict()") {
  const ModelSpec m = load_model("llama3-8b");
  const HardwareProfile hw = load_hardware("h100-sxm-80g");
  Workload w;
  w.seq = 4096;
  w.global_batch = 32;
  PruneCounts pruned;
  const auto layouts = enumerate_layouts(m, w, 16, 8, SearchOptions{}, pruned);
  for (size_t i = 0; i < layouts.size(); i += 97)
    CHECK(fast_step_time(m, hw, w, layouts[i]) == doctest::Approx(predict(m, hw, w, layouts[i]).step_time).epsilon(1e-12));
}

TEST_CASE("no recommended layout exceeds the memory budget (random models and clusters)") {
  const std::vector<std::string> models = {"pythia-160m", "pythia-1.4b", "llama3-8b", "pythia-6.9b", "gpt-18b",
                                           "llama3-70b", "mixtral-8x7b", "seed-moe", "gpt-1.7b"};
  const std::vector<std::string> gpus_types = {"h100-sxm-80g", "a100-sxm-40g", "rtx-4090", "h200-sxm-141g"};
  std::mt19937 rng(20261129);
  int feasible = 0;
  for (int c = 0; c < 50; ++c) {
    PlanRequest rq;
    rq.model = load_model(models[rng() % models.size()]);
    rq.hardware = load_hardware(gpus_types[rng() % gpus_types.size()]);
    rq.gpus = 1 << (rng() % 5);
    rq.work.seq = 512 << (rng() % 4);
    rq.work.global_batch = Count(rq.gpus) << (rng() % 4);
    rq.threads = 2;
    rq.search.max_micro_batch = 8;
    if (rng() % 2) rq.memory_budget = (8 + rng() % 60) * kGiB;
    const PlanResult r = plan(rq);
    INFO(rq.model.name << " on " << rq.gpus << " x " << rq.hardware.name << " seq " << rq.work.seq);
    if (!r.feasible()) {
      CHECK(!r.closest.empty());
      for (const auto& cl : r.closest) CHECK(cl.peak_memory > r.budget);
      continue;
    }
    ++feasible;
    const Prediction p = predict(rq.model, rq.hardware, rq.work, r.ranked.front().layout);
    CHECK(p.peak_memory <= r.budget);
    CHECK(p.step_time == doctest::Approx(r.ranked.front().step_time).epsilon(1e-12));
    for (size_t i = 1; i < r.ranked.size() && i < 20; ++i) CHECK(r.ranked[i - 1].step_time <= r.ranked[i].step_time);
  }
  CHECK(feasible > 25);
}

TEST_CASE("1 and 2 threads give the same ranking, counts and closest layouts") {
  PlanRequest rq;
  rq.model = load_model("llama3-70b");
  rq.hardware = load_hardware("h100-sxm-80g");
  rq.gpus = 64;
  rq.work.seq = 8192;
  rq.work.global_batch = 128;
  rq.threads = 1;
  const PlanResult a = plan(rq);
  rq.threads = 2;
  const PlanResult b = plan(rq);
  REQUIRE(a.ranked.size() == b.ranked.size());
  CHECK(a.pruned == b.pruned);
  CHECK(a.evaluated == b.evaluated);
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    CHECK(a.ranked[i].layout == b.ranked[i].layout);
    CHECK(a.ranked[i].step_time == b.ranked[i].step_time);
  }
}

TEST_CASE("an infeasible request (405B on eight 24 GiB GPUs) lists the closest layouts and exits 1") {
  PlanRequest rq;
  rq.model = load_model("llama3.1-405b");
  rq.hardware = load_hardware("rtx-4090");
  rq.gpus = 8;
  rq.work.seq = 8192;
  rq.work.global_batch = 8;
  const PlanResult r = plan(rq);
  CHECK_FALSE(r.feasible());
  REQUIRE(r.closest.size() == 5);
  for (size_t i = 1; i < r.closest.size(); ++i) CHECK(r.closest[i - 1].peak_memory <= r.closest[i].peak_memory);
  CHECK(r.closest.front().peak_memory > r.budget);
  const std::string cmd = std::string(SIXFOLD_BINARY) +
                          " plan --model llama3.1-405b --hardware rtx-4090 --gpus 8 --seq 8192 --global-batch 8 "
                          "> /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 1);
}

TEST_CASE("selective recompute is searched with the Megatron-Core modules the model has, lightest first") {
  namespace rm = recompute_module;
  const SearchOptions o;
  const auto dense = recompute_policies(load_model("llama3-8b"), o);
  const auto ds = recompute_policies(load_model("deepseek-v3"), o);
  auto has = [](const auto& policies, unsigned modules) {
    for (const RecomputePolicy& p : policies)
      if (p.recompute == Recompute::Selective && p.modules == modules) return true;
    return false;
  };
  CHECK(has(dense, rm::kCoreAttn | rm::kLayernorm));
  CHECK_FALSE(has(dense, rm::kCoreAttn | rm::kMoeAct));
  CHECK(has(ds, rm::kCoreAttn | rm::kMoeAct | rm::kLayernorm | rm::kMlaUpProj));
  CHECK(dense.front().recompute == Recompute::None);
  CHECK(dense.back().recompute == Recompute::Full);
  CHECK(dense.back().num_layers == 0);
  // Every layout with modules is valid for its model.
  const ModelSpec m = load_model("mixtral-8x7b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  PruneCounts pruned;
  int with_modules = 0;
  for (const Layout& l : enumerate_layouts(m, w, 16, 8, o, pruned)) {
    if (l.recompute_modules == 0) continue;
    ++with_modules;
    CHECK_NOTHROW(validate_layout(m, l, w, 16));
  }
  CHECK(with_modules > 0);
}

TEST_CASE("Megatron: 126 layers interleave over pp 8 only with the embedding and loss in the split, which the planner searches") {
  const ModelSpec m = load_model("llama3.1-405b");  // 126 layers: 128 units with the embedding and the loss
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  SearchOptions o;
  o.max_micro_batch = 1;
  PruneCounts pruned;
  bool found = false;
  for (const Layout& l : enumerate_layouts(m, w, 512, 8, o, pruned)) {
    if (l.pp != 8 || l.vpp != 8) continue;
    CHECK(l.embedding_in_pipeline_split);
    CHECK(l.loss_in_pipeline_split);
    CHECK_NOTHROW(validate_layout(m, l, w, 512));
    found = true;
  }
  CHECK(found);
  // Stage totals: 15 on the first and last (the embedding and the loss take a layer's place), 16 elsewhere.
  Layout l;
  l.pp = 8;
  l.vpp = 8;
  l.schedule = Schedule::Interleaved;
  l.embedding_in_pipeline_split = l.loss_in_pipeline_split = true;
  const std::vector<int> counts = stage_layer_counts(m, l);
  CHECK(counts.front() == 15);
  CHECK(counts.back() == 15);
  CHECK(counts[3] == 16);
  // Per virtual stage: 1 in the first (with the embedding) and the last (with the loss), 2 elsewhere.
  const std::vector<int> chunks = virtual_stage_layer_counts(m, l);
  REQUIRE(chunks.size() == 64);
  CHECK(chunks.front() == 1);
  CHECK(chunks.back() == 1);
  CHECK(chunks[1] == 2);
  CHECK(chunks[63 - 8] == 2);  // the last stage's first chunk
  // Without the accounting, Megatron's equal virtual stages cannot hold 126 layers on 8 x 8.
  l.embedding_in_pipeline_split = l.loss_in_pipeline_split = false;
  l.dp = 64;
  CHECK_THROWS_AS(validate_layout(m, l, w, 512), LayoutError);
  // The accounting is Megatron's, and needs the units to divide.
  l.embedding_in_pipeline_split = true;  // 127 units
  CHECK_THROWS_WITH_AS(validate_layout(m, l, w, 512), doctest::Contains("divide into pp*vpp"), LayoutError);
  l.loss_in_pipeline_split = true;
  w.framework = Framework::Torchtitan;
  CHECK_THROWS_WITH_AS(validate_layout(m, l, w, 512), doctest::Contains("Megatron's"), LayoutError);
}

TEST_CASE("with multi-token prediction the planner also tries a lighter last stage") {
  const ModelSpec m = load_model("llama3-8b");  // 32 layers
  Workload w;
  w.seq = 4096;
  w.global_batch = 32;
  SearchOptions o;
  o.max_micro_batch = 1;
  auto lightest_last = [&](int mtp) {
    w.mtp_layers = mtp;
    PruneCounts pruned;
    int lightest = 1000;
    for (const Layout& l : enumerate_layouts(m, w, 8, 8, o, pruned))
      if (l.pp == 4) lightest = std::min(lightest, stage_layer_counts(m, l).back());
    return lightest;
  };
  CHECK(lightest_last(0) >= 7);  // even 8, or Llama 3's one-lighter first/last split
  CHECK(lightest_last(1) == 6);  // 8 - 2: one MTP depth is about two layers' work
}

TEST_CASE("the search keeps only what the framework runs") {
  SearchOptions megatron, torchtitan;
  restrict_to_framework(megatron, Framework::Megatron);
  restrict_to_framework(torchtitan, Framework::Torchtitan);
  auto has = [](const auto& v, auto x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  CHECK_FALSE(has(megatron.recompute, Recompute::SelectiveOp));
  CHECK(has(megatron.recompute, Recompute::Selective));
  CHECK(megatron.zero_stages.size() == 4);
  CHECK_FALSE(has(torchtitan.recompute, Recompute::Selective));
  CHECK(has(torchtitan.recompute, Recompute::SelectiveOp));
  CHECK(torchtitan.zero_stages == std::vector<int>{0, 3});
}

TEST_CASE("hybrid sharding is searched where the data-parallel group spans nodes, as the framework runs it") {
  const ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 256;
  for (Framework f : {Framework::Megatron, Framework::DeepSpeed, Framework::DeepSpeedLegacy, Framework::Torchtitan}) {
    CAPTURE(to_string(f));
    w.framework = f;
    SearchOptions o;
    restrict_to_framework(o, f);
    PruneCounts pruned;
    bool hybrid = false;
    for (const Layout& l : enumerate_layouts(m, w, 128, 8, o, pruned)) {
      if (l.shard_dp() == l.dp) continue;
      hybrid = true;
      CHECK(hybrid_sharding_allows(f, l.zero));
      CHECK(l.tp * l.cp * l.shard_dp() <= 8);   // the shard group within a node
      CHECK(l.tp * l.cp * l.dp > 8);            // where sharding over all of dp would leave it
      CHECK_NOTHROW(validate_layout(m, l, w, 128));
    }
    CHECK(hybrid == (f != Framework::DeepSpeedLegacy));
    // Inside one node there is nothing to keep off the network.
    PruneCounts p8;
    for (const Layout& l : enumerate_layouts(m, w, 8, 8, o, p8)) CHECK(l.shard_dp() == l.dp);
  }
  // On 400 Gb/s nodes DeepSpeed's MiCS keeps its gathers on NVLink and ranks first.
  PlanRequest rq;
  rq.model = m;
  rq.hardware = load_hardware("a100-sxm-80g");
  apply_overrides(rq.hardware, load_cluster_overrides("aws-p4de", nullptr));
  rq.gpus = 128;
  rq.work = w;
  rq.work.framework = Framework::DeepSpeed;
  restrict_to_framework(rq.search, Framework::DeepSpeed);
  rq.threads = 1;
  rq.refine = kDefaultRefine;  // as `sixfold plan` ranks: the closed form ties them (its DP traffic hides)
  const PlanResult r = plan(rq);
  REQUIRE(!r.ranked.empty());
  CHECK(r.ranked.front().layout.shard_dp() == 8);
  CHECK(verdict_of(r.ranked.front().layout) == "ZeRO-3 (hybrid, shard 8)");  // `decide`'s words
  rq.search.hybrid_sharding = false;
  CHECK(plan(rq).ranked.front().simulated_step_time > r.ranked.front().simulated_step_time);
}
