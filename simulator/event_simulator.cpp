#include "simulator/event_simulator.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
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
  preds_[size_t(task)].push_back({before, fraction, false});
}

void EventSimulator::finish_after(int task, int before) { preds_[size_t(task)].push_back({before, 1.0, true}); }

void EventSimulator::run() {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph g(tasks_.size());
  for (size_t t = 0; t < preds_.size(); ++t)
    for (const Edge& e : preds_[t]) boost::add_edge(size_t(e.before), t, g);
  std::vector<size_t> reversed;
  reversed.reserve(tasks_.size());
  try {
    boost::topological_sort(g, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    throw Error("step simulator: the schedule's dependencies form a cycle (the pipeline would deadlock)");
  }

  // Link users per rank, for bandwidth sharing: tasks already timed on a link.
  std::vector<std::vector<int>> link_users;
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
      if (size_t(t.rank) >= link_users.size()) link_users.resize(size_t(t.rank) + 1);
      // Proportional sharing: while another flow on the same link is active, this one gets half
      // the bandwidth, so each second of overlap costs it half a second more.
      Seconds overlap = 0;
      for (int other : link_users[size_t(t.rank)]) {
        const Task& o = tasks_[size_t(other)];
        if (o.link != t.link || o.stream == t.stream) continue;
        overlap += std::max(0.0, std::min(o.end, start + duration) - std::max(o.start, start));
      }
      t.slowdown = overlap / 2;
      duration += t.slowdown;
      link_users[size_t(t.rank)].push_back(int(*it));
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
