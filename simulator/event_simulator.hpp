#pragma once
// The core of the step simulator: tasks on per-rank streams, a dependency graph between them, and
// one pass in topological order that gives every task its start and end (ASAP list timing).
// Tasks of one (rank, stream) run in the order they were added, one at a time, like a CUDA stream.
// Communication tasks that use the same physical link of a rank at the same time share its
// bandwidth; the later one is slowed proportionally (two flows, half the bandwidth each).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/units.hpp"

namespace sixfold {

enum class Stream : std::uint8_t { Compute, TP, CP, EP, PP, DP };
inline constexpr int kStreamCount = 6;
const char* to_string(Stream s);

// The physical medium a communication task uses (NVLink inside a node, the NIC across nodes).
enum class Link : std::uint8_t { None, IntraNode, InterNode };

// What a task represents, for reports and the trace.
enum class TaskKind : std::uint8_t {
  Forward, Backward, WeightGrad,  // compute blocks of (chunk, micro-batch)
  SendActivation, SendGradient,   // pipeline point-to-point
  GradReduce, ParamGather,        // data-parallel / ZeRO traffic
  Optimizer
};
const char* to_string(TaskKind k);

struct Task {
  int rank = 0;
  Stream stream = Stream::Compute;
  TaskKind kind = TaskKind::Forward;
  Link link = Link::None;
  int chunk = 0;
  Count micro_batch = 0;
  int index = 0;               // bucket / layer index of data-parallel tasks
  Seconds duration = 0;        // at full bandwidth
  Seconds start = 0, end = 0;  // filled by run()
  Seconds slowdown = 0;        // extra time from link sharing (filled by run())
};

class EventSimulator {
 public:
  int add(const Task& t);
  // `task` may start once `before` has done `fraction` of its work (1: once it has ended).
  void depend(int task, int before, double fraction = 1.0);
  // `task` cannot end before `before` ends (e.g. a layer block needs all its prefetched weights).
  void finish_after(int task, int before);

  // Times every task; throws Error when the dependencies form a cycle (a schedule that deadlocks).
  // Running again after only durations changed (task(id).duration) reuses the order of the
  // first run: the dependencies, not the durations, decide it.
  void run();

  const std::vector<Task>& tasks() const { return tasks_; }
  Task& task(int id) { return tasks_[std::size_t(id)]; }
  Seconds makespan() const;

 private:
  struct Edge {
    int before;
    double fraction;
    bool finish;
  };
  std::vector<Task> tasks_;
  std::vector<std::vector<Edge>> preds_;
  std::vector<int> last_on_stream_;  // (rank * kStreamCount + stream) -> last task id
  std::vector<std::size_t> order_;   // topological order of the last run; cleared by add/depend
};

}  // namespace sixfold
