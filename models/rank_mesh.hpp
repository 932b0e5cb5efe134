#pragma once
// The rank mesh: which world rank holds which coordinates, Megatron-LM's order, fastest-varying
// first:
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
// so TP peers are neighbours (one node, NVLink), then CP, then DP, and pipeline stages are the
// slowest dimension (Megatron's default order "tp-cp-ep-dp-pp"). The one copy of that order: the
// executor splits its process groups by it, the cost model places groups on nodes by its strides,
// and `run` maps ranks to stages with it.
//
// Expert groups are where the two users still differ (issue 14): the cost model places them as
// Megatron-Core's expert mesh does (etp fastest, then ep, over the tp*cp*dp ranks of a stage), the
// executor carves ep out of the data-parallel dimension (ep_rank = dp_rank % ep).
#include "models/layout.hpp"

namespace sixfold {

struct RankCoordinates {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};

RankCoordinates rank_coordinates(const Layout& layout, int world_rank);
int world_rank_of(const Layout& layout, const RankCoordinates& c);

// The distance in world ranks between neighbouring members of a TP, CP, DP or PP group.
enum class MeshAxis { TP, CP, DP, PP };
long mesh_stride(const Layout& layout, MeshAxis axis);

}  // namespace sixfold
