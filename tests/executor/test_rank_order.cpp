// The executor's process groups (rank order); the schedules it runs are tested with
// models/pipeline_schedule in tests/models/test_pipeline_schedule.cpp.
#include <doctest/doctest.h>

#include "executor/process_groups.hpp"

using namespace sixfold;

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
