#include "executor/runtime/process_groups.hpp"

#include "common/error.hpp"

namespace sixfold {

ProcessGroups make_process_groups(const Layout& l, Communicator& world) {
  if (world.size() != l.gpus())
    throw UsageError("the layout needs dp*tp*pp*cp = " + std::to_string(l.gpus()) + " ranks but " +
                     std::to_string(world.size()) + " were launched (" + describe(l) + ")");
  if ((long(l.tp) * l.cp * l.dp) % (long(l.ep) * l.etp) != 0)
    throw UsageError("ep x etp must divide the tp x cp x dp ranks of a pipeline stage (ep=" + std::to_string(l.ep) +
                     ", etp=" + std::to_string(l.etp) + ", tp x cp x dp=" + std::to_string(l.tp * l.cp * l.dp) + ")");
  ProcessGroups g;
  g.world = &world;
  g.me = rank_coordinates(l, world.rank());
  g.expert = expert_coordinates(l, world.rank());
  g.ep_rank = g.expert.ep;
  const auto& c = g.me;
  const auto& e = g.expert;
  const std::string who = " of world rank " + std::to_string(world.rank());
  // Colors are linear indices over the coordinates that stay fixed inside the group.
  g.tp = world.split(c.pp * l.dp * l.cp + c.dp * l.cp + c.cp, c.tp, "tp group" + who);
  g.cp = world.split(c.pp * l.dp * l.tp + c.dp * l.tp + c.tp, c.cp, "cp group" + who);
  g.dp = world.split(c.pp * l.cp * l.tp + c.cp * l.tp + c.tp, c.dp, "dp group" + who);
  g.dp_cp = world.split(c.pp * l.tp + c.tp, c.dp * l.cp + c.cp, "dp x cp group" + who);
  const int shard = l.shard_dp(), replica = c.dp / shard, in_shard = c.dp % shard;
  g.dp_shard = world.split((c.pp * l.shard_replicas() + replica) * l.tp + c.tp, in_shard * l.cp + c.cp,
                           "shard group" + who);
  g.dp_replica = world.split(((c.pp * shard + in_shard) * l.cp + c.cp) * l.tp + c.tp, replica, "replica group" + who);
  g.pp = world.split(c.dp * l.cp * l.tp + c.cp * l.tp + c.tp, c.pp, "pp group" + who);
  g.ep = world.split((c.pp * expert_data_size(l) + e.edp) * l.etp + e.etp, e.ep, "ep group" + who);
  g.expert_dp = world.split((c.pp * l.ep + e.ep) * l.etp + e.etp, e.edp, "expert dp group" + who);
  // First and last stage of each pipeline share the tied embedding; other stages get a group of
  // their own that is never used.
  const bool on_embedding = c.pp == 0 || c.pp == l.pp - 1;
  const int pipeline = c.dp * l.cp * l.tp + c.cp * l.tp + c.tp;
  g.embedding = world.split(on_embedding ? pipeline : l.dp * l.cp * l.tp + world.rank(), c.pp, "embedding group" + who);
  return g;
}

}  // namespace sixfold
