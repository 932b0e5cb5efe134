// The one copy of the pipeline schedules (models/pipeline_schedule.hpp): the order the simulator
// plays and the executor runs, and the warm-up the memory model counts.
#include <doctest/doctest.h>

#include <set>

#include "models/pipeline_schedule.hpp"

using namespace sixfold;

TEST_CASE("1F1B: warm-up of pp - stage - 1 forwards, every micro-batch once each way") {
  auto a = stage_order(Schedule::OneFOneB, 4, 1, 6, 1);
  REQUIRE(a.size() == 12);
  CHECK(a[0].phase == Phase::Forward);
  CHECK(a[1].phase == Phase::Forward);
  CHECK(a[2].phase == Phase::Forward);
  CHECK(a[3].phase == Phase::Backward);  // after 2 warm-up forwards: F2 then B0
  CHECK(a[3].micro_batch == 0);
  auto last = stage_order(Schedule::OneFOneB, 4, 1, 6, 3);
  CHECK(last[0].phase == Phase::Forward);
  CHECK(last[1].phase == Phase::Backward);
}

TEST_CASE("interleaved: each (micro-batch, chunk) runs forward before backward, once each, pp 1 too") {
  for (const auto& [pp, stages] : {std::pair{2, 2}, std::pair{1, 1}}) {
    for (int stage = 0; stage < stages; ++stage) {
      CAPTURE(pp);
      CAPTURE(stage);
      auto a = stage_order(Schedule::Interleaved, pp, 2, 4, stage);
      REQUIRE(a.size() == 16);
      std::set<std::pair<Count, int>> fwd, bwd;
      for (const auto& x : a) {
        if (x.phase == Phase::Forward) {
          fwd.insert({x.micro_batch, x.chunk});
        } else {
          CHECK(fwd.count({x.micro_batch, x.chunk}) == 1);
          bwd.insert({x.micro_batch, x.chunk});
        }
      }
      CHECK(fwd.size() == 8);
      CHECK(bwd.size() == 8);
    }
  }
}

TEST_CASE("warm-up and peak blocks are those of the order itself") {
  struct Case {
    Schedule schedule;
    int pp, vpp;
    Count m;
  };
  for (const Case& c : {Case{Schedule::GPipe, 4, 1, 8}, Case{Schedule::OneFOneB, 4, 1, 8}, Case{Schedule::OneFOneB, 8, 1, 3},
                        Case{Schedule::ZeroBubble, 4, 1, 8}, Case{Schedule::Interleaved, 4, 2, 8},
                        Case{Schedule::Interleaved, 2, 3, 4}, Case{Schedule::Interleaved, 1, 2, 4}}) {
    for (int s = 0; s < c.pp; ++s) {
      CAPTURE(to_string(c.schedule));
      CAPTURE(s);
      const auto order = stage_order(c.schedule, c.pp, c.vpp, c.m, s);
      Count before_backward = 0, held = 0, peak = 0;
      for (const auto& b : order) {
        if (b.phase != Phase::Forward) break;
        ++before_backward;
      }
      // Held at the peak: the most forwards whose backward has not yet run.
      for (const auto& b : order) {
        if (b.phase == Phase::Forward) peak = std::max(peak, ++held);
        if (b.phase == Phase::Backward) --held;  // ZB-H1's W passes free nothing more
      }
      // The warm-up is what runs before the steady one-forward-one-backward phase: the forwards
      // before the first backward are the warm-up and the steady phase's first (if there is one).
      Count blocks = 0;
      for (const auto& b : order) blocks += b.phase == Phase::Forward ? 1 : 0;
      CHECK(before_backward == std::min(warmup_forwards(c.schedule, c.pp, c.vpp, c.m, s) + 1, blocks));
      CHECK(peak_held_blocks(c.schedule, c.pp, c.vpp, c.m, s) == peak);
    }
  }
}
