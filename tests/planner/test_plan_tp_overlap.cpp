// The planner prices TP communication as the frameworks run it at scale: overlapped with the GEMMs
// on sequence-parallel layouts (Megatron's --tp-comm-overlap, torchtitan's Async TP with compile),
// never for DeepSpeed; `plan --no-tp-overlap` prices it exposed.
#include <doctest/doctest.h>

#include "models/model_zoo.hpp"
#include "planner/planner.hpp"
#include "planner/search_space.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/hardware_profile.hpp"

using namespace sixfold;

namespace {
PlanRequest llama70b_on_64(Framework f) {
  PlanRequest rq;
  rq.model = load_model("llama3-70b");
  rq.hardware = load_hardware("h100-sxm-80g");
  rq.gpus = 64;
  rq.work.seq = 8192;
  rq.work.global_batch = 128;
  rq.work.framework = f;
  restrict_to_framework(rq.search, f);
  return rq;
}
}  // namespace

TEST_CASE("planner: TP overlap on every sequence-parallel tp > 1 layout, where the framework runs it") {
  SearchOptions o;
  PruneCounts pruned;
  ModelSpec m = load_model("llama3-8b");
  Workload w;
  w.seq = 4096;
  w.global_batch = 64;
  for (const Layout& l : enumerate_layouts(m, w, 16, 8, o, pruned)) {
    CAPTURE(describe(l));
    CHECK(l.tp_overlap == (l.tp > 1 && l.sp));
  }
  // DeepSpeed has none; torchtitan's Async TP needs compiled blocks.
  Workload ds = w;
  ds.framework = Framework::DeepSpeed;
  for (const Layout& l : enumerate_layouts(m, ds, 16, 8, o, pruned)) CHECK_FALSE(l.tp_overlap);
  Workload titan = w;
  titan.framework = Framework::Torchtitan;
  for (const Layout& l : enumerate_layouts(m, titan, 16, 8, o, pruned)) CHECK_FALSE(l.tp_overlap);
  titan.compile = true;
  bool any = false;
  for (const Layout& l : enumerate_layouts(m, titan, 16, 8, o, pruned)) any = any || l.tp_overlap;
  CHECK(any);
  // Turned off: none.
  o.tp_overlap = false;
  for (const Layout& l : enumerate_layouts(m, w, 16, 8, o, pruned)) CHECK_FALSE(l.tp_overlap);
}

TEST_CASE("planner: with TP overlap a TP recommendation is priced faster than the same layout exposed") {
  PlanRequest rq = llama70b_on_64(Framework::Megatron);
  const PlanResult on = plan(rq);
  REQUIRE(on.feasible());
  const Layout& best = on.ranked.front().layout;
  CAPTURE(describe(best));
  REQUIRE(best.tp > 1);
  CHECK(best.tp_overlap == best.sp);
  rq.search.tp_overlap = false;
  const PlanResult off = plan(rq);
  REQUIRE(off.feasible());
  CHECK_FALSE(off.ranked.front().layout.tp_overlap);
  CHECK(on.ranked.front().step_time < off.ranked.front().step_time);
  if (best.tp_overlap) {
    Layout exposed = best;
    exposed.tp_overlap = false;
    CHECK(predict(rq.model, rq.hardware, rq.work, exposed).step_time > on.ranked.front().step_time);
  }
}
