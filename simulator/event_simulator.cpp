#include "simulator/event_simulator.hpp"

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

#include "common/error.hpp"

namespace sixfold {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::TP: return "tp";
    case Stream::CP: return "cp";
    case Stream::EP: return "ep";
    case Stream::PP: return "pp";
    case Stream::DP: return "dp";
  }
  return "?";
}

const char* to_string(TaskKind k) {
  switch (k) {
    case TaskKind::Forward: return "forward";
    case TaskKind::Backward: return "backward";
    case TaskKind::WeightGrad: return "weight_grad";
    case TaskKind::SendActivation: return "send_activation";
    case TaskKind::SendGradient: return "send_gradient";
    case TaskKind::GradReduce: return "grad_reduce";
    case TaskKind::ParamGather: return "param_gather";
    case TaskKind::Optimizer: return "optimizer";
  }
  return "?";
}

int EventSimulator::add(const Task& t) {
  order_.clear();
  const int id = int(tasks_.size());
  tasks_.push_back(t);
  preds_.emplace_back();
  const size_t slot = size_t(t.rank) * kStreamCount + size_t(t.stream);
  if (slot >= last_on_stream_.size()) last_on_stream_.resize(slot + 1, -1);
  if (last_on_stream_[slot] >= 0) depend(id, last_on_stream_[slot]);
  last_on_stream_[slot] = id;
  return id;
}

void EventSimulator::depend(int task, int before, double fraction) {
  order_.clear();
  preds_[size_t(task)].push_back({before, fraction, false});
}

void EventSimulator::finish_after(int task, int before) {
  order_.clear();
  preds_[size_t(task)].push_back({before, 1.0, true});
}

void EventSimulator::run() {
  // One compressed graph (two arrays) rather than an adjacency list with a vector per task: a
  // 64-stage pipeline of 512 micro-batches has ~10^5 tasks. Each task's out-edges keep the order
  // the dependencies were declared in (a stable sort by source), so the depth-first topological
  // order, and with it the link-sharing below, is the adjacency list's.
  if (order_.size() != tasks_.size()) {
    using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
    // Counting sort by source, in declaration order within a source (stable, linear).
    std::vector<size_t> first(tasks_.size() + 1, 0);
    for (const auto& preds : preds_)
      for (const Edge& e : preds) ++first[size_t(e.before) + 1];
    for (size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
    std::vector<std::pair<size_t, size_t>> edges(first.back());
    std::vector<size_t> next(first.begin(), first.end() - 1);
    for (size_t t = 0; t < preds_.size(); ++t)
      for (const Edge& e : preds_[t]) edges[next[size_t(e.before)]++] = {size_t(e.before), t};
    // GCC 12 reports an out-of-bounds write inside Boost's CSR constructor (a one-element vector it
    // value-initialises); a false positive of its -Warray-bounds at -O2, silenced here only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
    const Graph g(boost::edges_are_sorted, edges.begin(), edges.end(), tasks_.size());
#pragma GCC diagnostic pop
    order_.clear();
    order_.reserve(tasks_.size());
    try {
      boost::topological_sort(g, std::back_inserter(order_));  // reversed: the last task first
    } catch (const boost::not_a_dag&) {
      order_.clear();
      throw Error("step simulator: the schedule's dependencies form a cycle (the pipeline would deadlock)");
    }
  }
  const std::vector<size_t>& reversed = order_;

  // Link users, for bandwidth sharing: per (rank, link, stream) the intervals of the tasks already
  // timed. A stream runs one task at a time and topological order visits its tasks in stream
  // order, so each list is sorted and non-overlapping: the flows that overlap a new task are found
  // by binary search, not by a scan of every earlier flow (a ZeRO-3 step with 25 MiB buckets has
  // tens of thousands of them).
  struct Interval {
    Seconds start, end;
  };
  constexpr size_t kLinks = 3;
  std::vector<std::vector<Interval>> link_users;  // (rank * kLinks + link) * kStreamCount + stream
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
    Task& t = tasks_[*it];
    Seconds start = 0, finish_floor = 0;
    for (const Edge& e : preds_[*it]) {
      const Task& b = tasks_[size_t(e.before)];
      if (e.finish) finish_floor = std::max(finish_floor, b.end);
      else start = std::max(start, e.fraction >= 1.0 ? b.end : b.start + e.fraction * (b.end - b.start));
    }
    Seconds duration = t.duration;
    if (t.link != Link::None && duration > 0) {
      const size_t base = (size_t(t.rank) * kLinks + size_t(t.link)) * kStreamCount;
      if (base + kStreamCount > link_users.size()) link_users.resize(base + kStreamCount);
      // Proportional sharing: while another flow on the same link is active, this one gets half
      // the bandwidth, so each second of overlap costs it half a second more.
      const Seconds window_end = start + duration;
      Seconds overlap = 0;
      for (size_t stream = 0; stream < size_t(kStreamCount); ++stream) {
        if (stream == size_t(t.stream)) continue;
        const std::vector<Interval>& users = link_users[base + stream];
        auto o = std::upper_bound(users.begin(), users.end(), start,
                                  [](Seconds x, const Interval& iv) { return x < iv.end; });
        for (; o != users.end() && o->start < window_end; ++o)
          overlap += std::max(0.0, std::min(o->end, window_end) - std::max(o->start, start));
      }
      t.slowdown = overlap / 2;
      duration += t.slowdown;
      link_users[base + size_t(t.stream)].push_back({start, std::max(start + duration, finish_floor)});
    }
    t.start = start;
    t.end = std::max(start + duration, finish_floor);
  }
}

Seconds EventSimulator::makespan() const {
  Seconds end = 0;
  for (const Task& t : tasks_) end = std::max(end, t.end);
  return end;
}

}  // namespace sixfold
