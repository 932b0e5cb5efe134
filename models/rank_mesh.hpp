#pragma once
// The rank mesh: which world rank holds which coordinates, Megatron-LM's order, fastest-varying
// first:
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
// so TP peers are neighbours (one node, NVLink), then CP, then DP, and pipeline stages are the
// slowest dimension (Megatron's default order "tp-cp-ep-dp-pp"). The one copy of that order: the
// executor splits its process groups by it, the cost model places groups on nodes by its strides,
// and `run` maps ranks to stages with it.
//
// The experts' mesh is Megatron-Core's: the same tp*cp*dp ranks of a pipeline stage, ordered etp
// fastest, then ep, then the expert-data index (expert_coordinates), so that with etp = 1 the EP
// peers are the stage's neighbouring ranks (its TP and CP peers first).
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

// A rank's place in the experts' mesh of its stage: local = tp + tp*(cp + cp*dp), the rank's
// index among the stage's tp*cp*dp ranks, = etp + etp*(ep + ep*edp). Expert e lives on EP rank
// e / (experts / ep); expert gradients reduce over the ranks of one (ep, etp) pair.
struct ExpertCoordinates {
  int etp = 0, ep = 0, edp = 0;
};
ExpertCoordinates expert_coordinates(const Layout& layout, int world_rank);
enum class ExpertAxis { ETP, EP, EDP };
long expert_stride(const Layout& layout, ExpertAxis axis);  // in world ranks, inside a stage
int expert_data_size(const Layout& layout);                  // tp*cp*dp / (ep*etp)

}  // namespace sixfold
