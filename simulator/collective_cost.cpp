#include "simulator/collective_cost.hpp"

#include <algorithm>

namespace sixfold {

GroupPlacement place_group(Group g, const Layout& l, int gpus_per_node) {
  long stride = 1;
  int size = 1;
  switch (g) {
    case Group::None: return {};
    case Group::TP: stride = 1; size = l.tp; break;
    case Group::CP: stride = l.tp; size = l.cp; break;
    case Group::DP: stride = long(l.tp) * l.cp; size = l.dp; break;
    case Group::PP: stride = long(l.tp) * l.cp * l.dp; size = 2; break;  // a send/recv pair
    case Group::ExpertTensor: stride = 1; size = l.etp; break;
    case Group::EP: stride = l.etp; size = l.ep; break;
    case Group::ExpertData: stride = long(l.etp) * l.ep; size = std::max(1, l.tp * l.cp * l.dp / (l.ep * l.etp)); break;
  }
  GroupPlacement p;
  p.size = size;
  p.crosses_nodes = size > 1 && stride * size > gpus_per_node;
  // A pipeline neighbour is in the same node only when a whole tp*cp*dp block fits twice in it.
  if (g == Group::PP) p.crosses_nodes = stride * 2 > gpus_per_node;
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

Seconds collective_time(Collective c, Bytes message, const GroupPlacement& where, const HardwareProfile& hw) {
  if (c == Collective::None || message <= 0) return 0;
  if (where.size <= 1 && c != Collective::SendRecv) return 0;
  const CollectiveCurve& curve = where.crosses_nodes ? hw.inter_node : hw.intra_node;
  // Small messages reach a fraction of the peak bus bandwidth: size / (size + half_size).
  const Bytes per_step = c == Collective::RingExchange ? message : message;
  const double busbw = curve.peak_busbw * per_step / (per_step + curve.half_size);
  const int steps = c == Collective::RingExchange ? where.size - 1 : 1;
  return steps * curve.latency + bus_factor(c, where.size) * message / busbw;
}

}  // namespace sixfold
