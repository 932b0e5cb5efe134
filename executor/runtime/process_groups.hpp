#pragma once
// Process groups of a layout, Megatron-LM style, over the rank mesh of models/rank_mesh.hpp
// (tp fastest, then cp, dp, pp) and its experts' mesh (etp fastest, then ep, then the
// expert-data index, over the tp x cp x dp ranks of a stage: Megatron-Core's), the placement the
// cost model prices.
//
// Groups:
//   tp          same (pp, dp, cp)            tensor-parallel collectives
//   cp          same (pp, dp, tp)            ring attention
//   dp          same (pp, cp, tp)            (not used for gradients; see dp_cp)
//   dp_cp       same (pp, tp)                gradient reduction and ZeRO sharding of dense params
//   dp_shard    same (pp, tp, dp / dp_shard) the ZeRO shard group of dense params: dp_cp, or under
//                                            hybrid sharding dp_shard x cp of it
//   dp_replica  same (pp, tp, cp, dp % dp_shard) one rank of each shard group: the replicas' sum
//                                            of a gradient shard (size 1 without hybrid sharding)
//   pp          same (dp, cp, tp)            pipeline send/receive, ordered by stage
//   ep          same (pp, edp, etp)          MoE all-to-all
//   expert_dp   same (pp, ep, etp)           gradient reduction of expert params
//   embedding   first and last stage of one pipeline: tied embedding gradient
#include <memory>

#include "executor/comm/communicator.hpp"
#include "models/layout.hpp"
#include "models/rank_mesh.hpp"

namespace sixfold {

struct ProcessGroups {
  RankCoordinates me;
  ExpertCoordinates expert;
  int ep_rank = 0;  // expert.ep: the rank holds experts ep_rank * E/ep ... (ep_rank + 1) * E/ep - 1
  Communicator* world = nullptr;
  std::unique_ptr<Communicator> tp, cp, dp, dp_cp, dp_shard, dp_replica, pp, ep, expert_dp, embedding;
};

// Collective over the world: every rank must call it with the same layout.
ProcessGroups make_process_groups(const Layout& layout, Communicator& world);

}  // namespace sixfold
