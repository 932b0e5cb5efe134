#include "simulator/collective_cost.hpp"

#include "models/rank_mesh.hpp"
#include "simulator/kernel_tables.hpp"

#include <algorithm>
#include <cmath>

namespace sixfold {

GroupPlacement place_group(Group g, const Layout& l, int scale_up_gpus) {
  long stride = 1;
  int size = 1;
  switch (g) {
    case Group::None: return {};
    case Group::TP: stride = mesh_stride(l, MeshAxis::TP); size = l.tp; break;
    case Group::CP: stride = mesh_stride(l, MeshAxis::CP); size = l.cp; break;
    case Group::DP: stride = mesh_stride(l, MeshAxis::DP); size = l.dp; break;
    // The replicas of one hybrid shard: one rank of each shard group, a tp*cp*dp_shard block apart.
    case Group::DPReplica: stride = mesh_stride(l, MeshAxis::DP) * l.shard_dp(); size = l.shard_replicas(); break;
    case Group::PP: stride = mesh_stride(l, MeshAxis::PP); size = 2; break;  // a send/recv pair
    case Group::ExpertTensor: stride = expert_stride(l, ExpertAxis::ETP); size = l.etp; break;
    case Group::EP: stride = expert_stride(l, ExpertAxis::EP); size = l.ep; break;
    case Group::ExpertData: stride = expert_stride(l, ExpertAxis::EDP); size = expert_data_size(l); break;
  }
  GroupPlacement p;
  p.size = size;
  p.crosses_nodes = size > 1 && stride * size > scale_up_gpus;
  // A pipeline neighbour is in the same node only when a whole tp*cp*dp block fits twice in it.
  if (g == Group::PP) p.crosses_nodes = stride * 2 > scale_up_gpus;
  p.ranks_per_node = int(std::max<long>(1, std::min<long>(size, scale_up_gpus / std::max<long>(1, stride))));
  if (g == Group::PP) p.ranks_per_node = 1;
  return p;
}

GroupPlacement place_gradient_group(const Layout& l, int scale_up_gpus) {
  GroupPlacement p;
  // dp x cp, or under hybrid sharding one shard group: dp_shard x cp, a tp*cp*dp_shard block.
  p.size = l.shard_dp() * l.cp;
  p.crosses_nodes = p.size > 1 && mesh_stride(l, MeshAxis::DP) * l.shard_dp() > scale_up_gpus;
  p.ranks_per_node = std::max(1, std::min(p.size, scale_up_gpus / std::max(1, l.tp)));
  return p;
}

double bus_factor(Collective c, int n) {
  if (n <= 1) return 0;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return double(n - 1) / n;
    case Collective::RingExchange: return double(n - 1);  // n-1 sequential exchanges of the message
    case Collective::SendRecv: return 1.0;
    case Collective::None: return 0;
  }
  return 0;
}

// Ring steps of a collective inside a node: 2(n-1) for an all-reduce (reduce-scatter then
// all-gather), n-1 for an all-gather or reduce-scatter. NCCL's own tuning model prices a ring
// collective as baseLat + nsteps x hwLat with these nsteps (src/graph/tuning.cc,
// ncclTopoTuneModel). Groups across nodes keep their one fitted latency.
double intra_node_ring_steps(Collective c, const GroupPlacement& where) {
  if (where.crosses_nodes || where.size <= 1) return 0;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (where.size - 1);
    case Collective::AllGather:
    case Collective::ReduceScatter: return where.size - 1.0;
    default: return 0;
  }
}

double node_deduplicated_share(int top_k, Count experts, const GroupPlacement& where) {
  if (!where.crosses_nodes || top_k < 1 || experts < 1) return 0;
  const int r = std::max(1, where.ranks_per_node);
  const double nodes = std::ceil(double(where.size) / r);
  if (nodes <= 1) return 0;
  const double e = double(experts), per_node = e / nodes;
  double none = 1;  // a given other node holds none of the token's experts
  for (int i = 0; i < top_k && none > 0; ++i) none *= std::max(0.0, (e - per_node - i) / (e - i));
  return (nodes - 1) * (1 - none) / top_k;
}

Seconds collective_time(Collective c, Bytes message, const GroupPlacement& where, const HardwareProfile& hw,
                        double network_share) {
  if (c == Collective::None || message <= 0) return 0;
  if (where.size <= 1 && c != Collective::SendRecv) return 0;
  // Inside one node: the measured NCCL time of this collective on this many GPUs
  // (configs/kernel_tables, nccl-tests' size convention, which `message` follows).
  if (!where.crosses_nodes && hw.use_kernel_tables && hw.use_collective_tables &&
      (c == Collective::AllReduce || c == Collective::AllGather || c == Collective::ReduceScatter ||
       c == Collective::AllToAll))
    if (const KernelTables* tables = kernel_tables_for(hw.name))
      if (auto t = tables->collective_time(c, where.size, message)) return *t;
  const CollectiveCurve& curve = where.crosses_nodes ? hw.inter_node : hw.intra_node;
  // All-to-all across nodes: every GPU sends each peer its own share directly, so the share bound
  // for other nodes, (n - r)/n of the message with r ranks per node, leaves through this GPU's own
  // NIC while the (r - 1)/n for its node's peers goes over NVLink at the same time. (The ring
  // collectives below cross a node boundary only at ring edges, spread over every NIC of the node.)
  if (where.crosses_nodes && c == Collective::AllToAll) {
    const double n = where.size, r = std::max(1, where.ranks_per_node);
    // A node-deduplicating dispatcher sends fewer copies across the network; the receiving GPU
    // forwards each to its node's experts over NVLink, alongside the copies for this node.
    const bool dedup = network_share >= 0;
    const Bytes off_node = dedup ? message * network_share : message * (n - r) / n;
    const Bytes on_node = message * (r - 1) / n + (dedup ? message * (n - r) / n * (r - 1) / r : 0.0);
    const double net = curve.peak_busbw * off_node / (off_node + curve.half_size);
    const double nvlink = hw.intra_node.peak_busbw * on_node / (on_node + hw.intra_node.half_size);
    const Seconds latency = std::max(curve.latency, ring_latency(Collective::AllGather, where));
    return latency + std::max(off_node / net, on_node > 0 ? on_node / nvlink : 0.0);
  }
  double peak = curve.peak_busbw;
  if (where.crosses_nodes && c != Collective::SendRecv && c != Collective::RingExchange)
    peak = std::min(hw.intra_node.peak_busbw, curve.peak_busbw * where.ranks_per_node);
  // Small messages reach a fraction of the peak bus bandwidth: size / (size + half_size).
  const double busbw = peak * message / (message + curve.half_size);
  const int steps = c == Collective::RingExchange ? where.size - 1 : 1;
  // Inside a node each ring step adds the curve's step latency; across nodes NCCL's own latency
  // model takes over where it exceeds the profile's (large groups).
  const Seconds latency = where.crosses_nodes ? std::max(curve.latency, ring_latency(c, where)) : curve.latency;
  return steps * latency + intra_node_ring_steps(c, where) * curve.step_latency +
         bus_factor(c, where.size) * message / busbw;
}

Seconds ring_latency(Collective c, const GroupPlacement& where) {
  // NCCL's own latency model (src/graph/tuning.cc, Simple protocol): a base of 8.4 us plus
  // 3.4 us per NVLink hop and 14 us per network hop of the ring; all-reduce takes 2(n-1) hops or
  // a tree of 2(log2 nodes) network and 2(ranks per node - 1) NVLink hops (4 and 14 us each),
  // whichever is shorter. All-gather and reduce-scatter have only the ring, so their latency
  // grows with the group: ~7 ms on 1536 GPUs, which is what makes small ZeRO-3 gathers slow.
  constexpr double kBase = 8.4e-6, kRingNvlink = 3.4e-6, kNet = 14e-6, kTreeNvlink = 4e-6;
  if (where.size <= 1) return 0;
  const int per_node = std::max(1, where.ranks_per_node);
  const int nodes = (where.size + per_node - 1) / per_node;
  const double inter = nodes - 1, intra = double(where.size - 1) - inter;
  switch (c) {
    case Collective::AllGather:
    case Collective::ReduceScatter: return kBase + intra * kRingNvlink + inter * kNet;
    case Collective::AllReduce: {
      const Seconds ring = kBase + 2 * (intra * kRingNvlink + inter * kNet);
      const Seconds tree = kBase + 2 * ((per_node - 1) * kTreeNvlink + std::ceil(std::log2(double(nodes))) * kNet);
      return std::min(ring, tree);
    }
    default: return 0;
  }
}

}  // namespace sixfold
