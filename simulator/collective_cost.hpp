#pragma once
// Time of a collective from its algorithm, the group's placement (inside a node or across nodes)
// and the measured bus bandwidth over message size (nccl-tests' busbw convention:
// all-reduce busbw = algbw * 2(n-1)/n; all-gather, reduce-scatter, all-to-all: (n-1)/n).
#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

struct GroupPlacement {
  int size = 1;
  bool crosses_nodes = false;
  int ranks_per_node = 1;  // members of the group inside one node (each with its own NIC)
};

// Rank order is Megatron's: tp fastest, then cp, dp, pp. Expert groups: etp fastest, then ep,
// then the expert-data group. A group spans nodes when its stride times its size exceeds the node.
GroupPlacement place_group(Group group, const Layout& layout, int scale_up_gpus);
// The group that reduces dense gradients: dp x cp ranks at stride tp (Megatron).
GroupPlacement place_gradient_group(const Layout& layout, int scale_up_gpus);

// nccl-tests' bus-bandwidth factor of a collective on n ranks.
double bus_factor(Collective c, int n);

// Seconds for one collective of `message` bytes on a group so placed. A group that spans nodes
// drives one NIC per member in each node in parallel (NCCL runs a ring per NIC), so its bus
// bandwidth is the per-NIC curve times the members per node, up to the NVLink curve.
// Inside a node each ring step adds the curve's step_latency to its latency.
double intra_node_ring_steps(Collective c, const GroupPlacement& where);
// `network_share`: for an all-to-all across nodes, the part of the message that leaves the node
// (default, negative: (n - r) / n, the copies bound for other nodes' ranks).
Seconds collective_time(Collective c, Bytes message, const GroupPlacement& where, const HardwareProfile& hw,
                        double network_share = -1);

// The part of an EP dispatch (or combine) that crosses the network under a node-deduplicating
// dispatcher (Workload::deepep_dispatch): each token goes once to every other node holding one of
// its top_k experts, not once per expert. Balanced routing picks top_k distinct experts of
// `experts` spread evenly over the group's nodes, so a given other node holds none of them with
// probability C(E - E/N, k) / C(E, k); the share of the message (k copies of the token) is the
// expected count of other nodes reached over k. 0 inside one node.
double node_deduplicated_share(int top_k, Count experts, const GroupPlacement& where);

// Start-up latency of a ring (or, for all-reduce, tree) collective across nodes, which grows
// with the group; collective_time uses it where it exceeds the profile's cross-node latency.
Seconds ring_latency(Collective c, const GroupPlacement& where);

}  // namespace sixfold
