#include <doctest/doctest.h>

#include <set>

#include "executor/pipeline_schedule.hpp"
#include "executor/process_groups.hpp"

using namespace sixfold;

TEST_CASE("1F1B: warm-up of pp - stage - 1 forwards, every micro-batch once each way") {
  auto a = pipeline_actions(Schedule::OneFOneB, 4, 1, 1, 6);
  REQUIRE(a.size() == 12);
  CHECK(a[0].forward);
  CHECK(a[1].forward);
  CHECK(a[2].forward);
  CHECK(!a[3].forward);  // after 2 warm-up forwards: F2 then B0
  CHECK(a[3].micro_batch == 0);
  auto last = pipeline_actions(Schedule::OneFOneB, 4, 1, 3, 6);
  CHECK(last[0].forward);
  CHECK(!last[1].forward);
}

TEST_CASE("interleaved: each (micro-batch, chunk) runs forward before backward, once each") {
  for (int stage = 0; stage < 2; ++stage) {
    auto a = pipeline_actions(Schedule::Interleaved, 2, 2, stage, 4);
    REQUIRE(a.size() == 16);
    std::set<std::pair<int, int>> fwd, bwd;
    for (const auto& x : a) {
      if (x.forward) fwd.insert({x.micro_batch, x.chunk});
      else {
        CHECK(fwd.count({x.micro_batch, x.chunk}) == 1);
        bwd.insert({x.micro_batch, x.chunk});
      }
    }
    CHECK(fwd.size() == 8);
    CHECK(bwd.size() == 8);
  }
}

TEST_CASE("rank order is Megatron's: tp fastest, then cp, dp, pp") {
  Layout l;
  l.tp = 2;
  l.cp = 2;
  l.dp = 2;
  l.pp = 2;
  auto c = rank_coordinates(l, 13);  // 13 = 1 + 2*(0 + 2*(1 + 2*1))
  CHECK(c.tp == 1);
  CHECK(c.cp == 0);
  CHECK(c.dp == 1);
  CHECK(c.pp == 1);
  CHECK(world_rank_of(l, c) == 13);
}
