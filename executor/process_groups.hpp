#pragma once
// Process groups of a layout, Megatron-LM style. World rank order, fastest-varying first:
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
// so TP peers are neighbours (one node, NVLink), then CP, then DP, and pipeline stages are the
// slowest dimension (Megatron's default order "tp-cp-ep-dp-pp"). Expert parallelism is carved
// out of the data-parallel dimension: ep_rank = dp_rank % ep, and the ranks of one EP group
// share (pp, tp, cp, dp_rank / ep).
//
// Groups:
//   tp          same (pp, dp, cp)            tensor-parallel collectives
//   cp          same (pp, dp, tp)            ring attention
//   dp          same (pp, cp, tp)            (not used for gradients; see dp_cp)
//   dp_cp       same (pp, tp)                gradient reduction and ZeRO sharding of dense params
//   pp          same (dp, cp, tp)            pipeline send/receive, ordered by stage
//   ep          same (pp, tp, cp, dp/ep)     MoE all-to-all
//   expert_dp   same (pp, tp, ep_rank)       gradient reduction of expert params
//   embedding   first and last stage of one pipeline: tied embedding gradient
#include <memory>

#include "executor/communicator.hpp"
#include "models/layout.hpp"

namespace sixfold {

struct RankCoordinates {
  int tp = 0, cp = 0, dp = 0, pp = 0, ep = 0;
};

RankCoordinates rank_coordinates(const Layout& layout, int world_rank);
int world_rank_of(const Layout& layout, const RankCoordinates& c);

struct ProcessGroups {
  RankCoordinates me;
  Communicator* world = nullptr;
  std::unique_ptr<Communicator> tp, cp, dp, dp_cp, pp, ep, expert_dp, embedding;
};

// Collective over the world: every rank must call it with the same layout.
ProcessGroups make_process_groups(const Layout& layout, Communicator& world);

}  // namespace sixfold
