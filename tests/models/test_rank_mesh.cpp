// The rank mesh (models/rank_mesh.hpp) the executor's process groups and the cost model's group
// placement both use.
#include <doctest/doctest.h>

#include "models/rank_mesh.hpp"

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
  CHECK(mesh_stride(l, MeshAxis::CP) == 2);
  CHECK(mesh_stride(l, MeshAxis::DP) == 4);
  CHECK(mesh_stride(l, MeshAxis::PP) == 8);
  for (int r = 0; r < l.gpus(); ++r) CHECK(world_rank_of(l, rank_coordinates(l, r)) == r);
}
