// The rank mesh (models/rank_mesh.hpp) the executor's process groups and the cost model's group
// placement both use.
#include <doctest/doctest.h>

#include "models/rank_mesh.hpp"

#include <set>
#include <utility>

using namespace sixfold;

namespace {
Layout mesh(int tp, int cp, int dp, int pp, int ep = 1, int etp = 1) {
  Layout l;
  l.tp = tp;
  l.cp = cp;
  l.dp = dp;
  l.pp = pp;
  l.ep = ep;
  l.etp = etp;
  return l;
}
}  // namespace

TEST_CASE("rank order is Megatron's: tp fastest, then cp, dp, pp") {
  const Layout l = mesh(2, 2, 2, 2);
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

TEST_CASE("the experts' mesh is Megatron-Core's: etp fastest, then ep, then expert data, inside a stage") {
  Layout l = mesh(2, 2, 2, 2, 4);
  CHECK(expert_data_size(l) == 2);
  CHECK(expert_stride(l, ExpertAxis::EP) == 1);
  CHECK(expert_stride(l, ExpertAxis::EDP) == 4);
  // World rank 13: stage 1, local index 5 = 1 + 4 * 1.
  auto e = expert_coordinates(l, 13);
  CHECK(e.etp == 0);
  CHECK(e.ep == 1);
  CHECK(e.edp == 1);
  // Every (ep, edp) pair of a stage once: the EP peers of rank r are its TP and CP neighbours.
  for (int pp = 0; pp < 2; ++pp) {
    std::set<std::pair<int, int>> seen;
    for (int r = pp * 8; r < (pp + 1) * 8; ++r) seen.insert({expert_coordinates(l, r).ep, expert_coordinates(l, r).edp});
    CHECK(seen.size() == 8);
  }
  l.etp = 2;
  l.ep = 2;
  e = expert_coordinates(l, 7);  // local 7 = 1 + 2 * (1 + 2 * 1)
  CHECK(e.etp == 1);
  CHECK(e.ep == 1);
  CHECK(e.edp == 1);
}
