// The planner's refinement with the step simulator: it only re-orders the analytical top K by
// simulated step time (the pick is the fastest simulated among them), K = 0 changes nothing, the
// outcome does not depend on the thread count, and `sixfold plan` prints the same bytes on 1 and
// 2 threads with the refinement on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "models/model_zoo.hpp"
#include "planner/planner.hpp"
#include "simulator/step_simulator.hpp"

using namespace sixfold;

namespace {

PlanRequest request(const std::string& model, int gpus, Count seq, Count batch) {
  PlanRequest rq;
  rq.model = load_model(model);
  rq.hardware = load_hardware("h100-sxm-80g");
  rq.gpus = gpus;
  rq.work.seq = seq;
  rq.work.global_batch = batch;
  rq.threads = 2;
  return rq;
}

std::string run_command(const std::string& args) {
  const std::string cmd = std::string(SIXFOLD_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe.get())) > 0;) out.append(buf, n);
  return out;
}

}  // namespace

TEST_CASE("refine: the top K re-ordered by simulated step time, the rest untouched") {
  for (const auto& [model, gpus] : {std::pair<std::string, int>{"llama3-70b", 64}, {"llama3-8b", 16}}) {
    CAPTURE(model);
    PlanRequest rq = request(model, gpus, 8192, 128);
    rq.refine = 0;
    const PlanResult plain = plan(rq);
    rq.refine = 8;
    const PlanResult refined = plan(rq);
    REQUIRE(plain.ranked.size() > 8);
    REQUIRE(refined.ranked.size() == plain.ranked.size());
    CHECK(plain.refined == 0);
    CHECK(refined.refined == 8);
    for (const Candidate& c : plain.ranked) CHECK(c.simulated_step_time == 0);
    // The refined top 8 are the analytical top 8, each with its own simulated time.
    Seconds fastest = 1e300;
    for (size_t i = 0; i < 8; ++i) {
      const Candidate& c = refined.ranked[i];
      const auto it = std::find_if(plain.ranked.begin(), plain.ranked.begin() + 8,
                                   [&](const Candidate& x) { return x.layout == c.layout; });
      CHECK(it != plain.ranked.begin() + 8);
      CHECK(c.step_time == it->step_time);
      const SimulationResult sim = simulate_step(rq.model, rq.hardware, rq.work, c.layout);
      CHECK(c.simulated_step_time == doctest::Approx(sim.step_time).epsilon(1e-12));
      CHECK(c.simulated_step_time > 0);
      fastest = std::min(fastest, c.simulated_step_time);
      if (i > 0) CHECK(refined.ranked[i - 1].simulated_step_time <= c.simulated_step_time);
    }
    // The pick is the fastest simulated among the K.
    CHECK(refined.ranked[0].simulated_step_time == fastest);
    MESSAGE(model << ": analytical pick " << describe(plain.ranked[0].layout) << " (closed form "
                  << plain.ranked[0].step_time << " s), refined pick " << describe(refined.ranked[0].layout)
                  << " (simulated " << refined.ranked[0].simulated_step_time << " s, closed form "
                  << refined.ranked[0].step_time << " s)");
    for (size_t i = 8; i < plain.ranked.size(); ++i) {
      CHECK(refined.ranked[i].layout == plain.ranked[i].layout);
      CHECK(refined.ranked[i].simulated_step_time == 0);
    }
  }
}

TEST_CASE("refine: K = 0 changes nothing, and K larger than the ranking refines them all") {
  PlanRequest rq = request("llama3-8b", 8, 4096, 32);
  rq.refine = 0;
  const PlanResult a = plan(rq);
  PlanResult b = plan(rq);
  refine_with_simulator(rq, b, 0);
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    CHECK(a.ranked[i].layout == b.ranked[i].layout);
    CHECK(b.ranked[i].simulated_step_time == 0);
  }
  CHECK(b.refined == 0);
  PlanResult all = plan(rq);
  refine_with_simulator(rq, all, int(all.ranked.size()) + 10);
  CHECK(all.refined == int(all.ranked.size()));
  for (size_t i = 1; i < all.ranked.size(); ++i)
    CHECK(all.ranked[i - 1].simulated_step_time <= all.ranked[i].simulated_step_time);
}

TEST_CASE("refine: 1 and 2 threads give the same refined ranking") {
  PlanRequest rq = request("llama3-70b", 64, 8192, 128);
  rq.refine = 16;
  rq.threads = 1;
  const PlanResult a = plan(rq);
  rq.threads = 2;
  const PlanResult b = plan(rq);
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    CHECK(a.ranked[i].layout == b.ranked[i].layout);
    CHECK(a.ranked[i].simulated_step_time == b.ranked[i].simulated_step_time);
  }
}

TEST_CASE("sixfold plan --refine: byte-identical on 1 and 2 threads, says it refined, --refine 0 does not") {
  const std::string args = "plan --model llama3-70b --hardware h100-sxm-80g --gpus 64 --seq 8192 --global-batch 128 --top 10";
  const std::string one = run_command(args + " --threads 1");
  const std::string two = run_command(args + " --threads 2");
  CHECK(one == two);
  CHECK(one.find("refined with the step simulator (8 candidates)") != std::string::npos);
  CHECK(one.find("simulated") != std::string::npos);
  const std::string off = run_command(args + " --threads 2 --refine 0");
  CHECK(off.find("refined with the step simulator") == std::string::npos);
  const std::string json_one = run_command(args + " --threads 1 --json");
  const std::string json_two = run_command(args + " --threads 2 --json");
  CHECK(json_one == json_two);
  CHECK(json_one.find("\"simulated_step_time_s\"") != std::string::npos);
  CHECK(run_command(args + " --threads 2 --refine 0 --json").find("\"simulated_step_time_s\"") == std::string::npos);
}
