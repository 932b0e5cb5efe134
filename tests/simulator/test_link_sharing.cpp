// The event simulator's link sharing finds the overlapping flows by binary search over each
// stream's timed intervals. This holds it equal to the direct definition (every earlier-timed flow
// of another stream on the same rank and link, scanned one by one) on random task graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <random>

#include "simulator/event_simulator.hpp"

using namespace sixfold;

namespace {

struct Dep {
  int task, before;
  double fraction;
  bool finish;
};

// The definition, quadratic: the same topological order as EventSimulator::run (Boost's DFS
// order over the same edges, stream edges first), then each flow slowed by half its overlap with
// every flow of another stream on its rank and link timed before it.
std::vector<Task> reference(std::vector<Task> tasks, const std::vector<Dep>& deps) {
  std::vector<std::vector<Dep>> preds(tasks.size());
  std::vector<int> last(64, -1);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const size_t slot = size_t(tasks[i].rank) * kStreamCount + size_t(tasks[i].stream);
    if (last[slot] >= 0) preds[i].push_back({int(i), last[slot], 1.0, false});
    last[slot] = int(i);
  }
  for (const Dep& d : deps) preds[size_t(d.task)].push_back(d);
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph g(tasks.size());
  for (size_t t = 0; t < preds.size(); ++t)
    for (const Dep& e : preds[t]) boost::add_edge(size_t(e.before), t, g);
  std::vector<size_t> reversed;
  boost::topological_sort(g, std::back_inserter(reversed));
  std::vector<int> timed;
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
    Task& t = tasks[*it];
    Seconds start = 0, floor = 0;
    for (const Dep& e : preds[*it]) {
      const Task& b = tasks[size_t(e.before)];
      if (e.finish) floor = std::max(floor, b.end);
      else start = std::max(start, e.fraction >= 1.0 ? b.end : b.start + e.fraction * (b.end - b.start));
    }
    Seconds duration = t.duration;
    if (t.link != Link::None && duration > 0) {
      Seconds overlap = 0;
      for (int other : timed) {
        const Task& o = tasks[size_t(other)];
        if (o.rank != t.rank || o.link != t.link || o.stream == t.stream) continue;
        overlap += std::max(0.0, std::min(o.end, start + duration) - std::max(o.start, start));
      }
      t.slowdown = overlap / 2;
      duration += t.slowdown;
      timed.push_back(int(*it));
    }
    t.start = start;
    t.end = std::max(start + duration, floor);
  }
  return tasks;
}

}  // namespace

TEST_CASE("link sharing by binary search equals the scan over every earlier flow (random task graphs)") {
  std::mt19937 rng(20261129);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int shared_flows = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 5 + int(rng() % 60);
    std::vector<Task> tasks;
    std::vector<Dep> deps;
    EventSimulator sim;
    for (int i = 0; i < n; ++i) {
      Task t;
      t.rank = int(rng() % 2);
      t.stream = Stream(rng() % kStreamCount);
      t.link = t.stream == Stream::Compute ? Link::None : Link(rng() % 3);
      t.duration = unit(rng) < 0.1 ? 0.0 : 0.1 + unit(rng);
      tasks.push_back(t);
      sim.add(t);
      // A few dependencies on earlier tasks: whole, partial (prefetch-style) or finish-after.
      for (int k = 0; k < 2 && i > 0; ++k) {
        if (unit(rng) < 0.4) continue;
        const int before = int(rng() % unsigned(i));
        const double r = unit(rng);
        Dep d{i, before, r < 0.3 ? unit(rng) : 1.0, r > 0.9};
        deps.push_back(d);
        if (d.finish) sim.finish_after(i, before);
        else sim.depend(i, before, d.fraction);
      }
    }
    sim.run();
    const std::vector<Task> expected = reference(tasks, deps);
    for (int i = 0; i < n; ++i) {
      const Task& a = sim.tasks()[size_t(i)];
      const Task& b = expected[size_t(i)];
      CAPTURE(trial);
      CAPTURE(i);
      CHECK(a.start == doctest::Approx(b.start).epsilon(1e-12));
      CHECK(a.end == doctest::Approx(b.end).epsilon(1e-12));
      CHECK(a.slowdown == doctest::Approx(b.slowdown).epsilon(1e-12));
      if (b.slowdown > 0) ++shared_flows;
    }
  }
  MESSAGE(shared_flows << " flows slowed by sharing");
  CHECK(shared_flows > 100);  // the random graphs do exercise sharing
}
