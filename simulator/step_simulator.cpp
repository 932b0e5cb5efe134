#include "simulator/step_simulator.hpp"

#include <algorithm>
#include <utility>

#include "common/error.hpp"

namespace sixfold {

namespace {

// Dense index of (stage, chunk, micro-batch, phase).
struct BlockIndex {
  int chunks;
  Count micro_batches;
  size_t operator()(int stage, int chunk, Count mb, Phase ph) const {
    return ((size_t(stage) * size_t(chunks) + size_t(chunk)) * size_t(micro_batches) + size_t(mb)) * 3 + size_t(ph);
  }
};

const BlockCost& cost_of(const ChunkInputs& c, Phase ph) {
  switch (ph) {
    case Phase::Forward: return c.forward;
    case Phase::Backward: return c.backward;
    case Phase::WeightGrad: return c.weight_grad;
  }
  return c.forward;
}

TaskKind kind_of(Phase ph) {
  switch (ph) {
    case Phase::Forward: return TaskKind::Forward;
    case Phase::Backward: return TaskKind::Backward;
    case Phase::WeightGrad: return TaskKind::WeightGrad;
  }
  return TaskKind::Forward;
}

struct StageBookkeeping {
  int last_compute = -1;  // last compute block or the blocking send after it
  int last_dp = -1;
  std::vector<int> blocks;  // compute block task ids in stage order
};

}  // namespace

SimulationResult simulate_pipeline(const PipelineInputs& in) {
  const int p = int(in.stages.size());
  if (p == 0) throw Error("step simulator: no pipeline stages");
  const int v = int(in.stages[0].chunks.size());
  const Count m = in.micro_batches;
  if (v == 0 || m <= 0) throw Error("step simulator: a stage needs at least one chunk and one micro-batch");
  const bool split = splits_weight_grad(in.schedule);
  const Phase grad_phase = split ? Phase::WeightGrad : Phase::Backward;
  const BlockIndex at{v, m};
  const size_t slots = size_t(p) * size_t(v) * size_t(m) * 3;
  std::vector<int> block, send;
  EventSimulator sim;
  std::vector<StageBookkeeping> book;
  std::vector<int> optimizer, post_gather;

  auto is_first_virtual = [&](int s, int c) { return s == 0 && c == 0; };
  auto is_last_virtual = [&](int s, int c) { return s == p - 1 && c == v - 1; };

  // Builds the step's task graph and plays it.
  auto build = [&] {
    block.assign(slots, -1);
    send.assign(slots, -1);
    sim = EventSimulator{};
    book.assign(static_cast<size_t>(p), StageBookkeeping{});
    for (int s = 0; s < p; ++s) {
      const StageInputs& st = in.stages[size_t(s)];
      const std::vector<ScheduledBlock> order = stage_order(in.schedule, p, v, m, s);
      StageBookkeeping& bk = book[size_t(s)];
      std::vector<int> grads_done(size_t(m), 0);  // gradient blocks finished per micro-batch (dp none)
      int pending_send = -1;
      int gather_next = -1;  // ZeRO-3: the prefetched gather of the next block

      auto add_dp = [&](TaskKind kind, Seconds duration, int chunk, Count mb, int index) {
        Task t;
        t.rank = s;
        t.stream = Stream::DP;
        t.kind = kind;
        t.link = in.dp_link;
        t.chunk = chunk;
        t.micro_batch = mb;
        t.index = index;
        t.duration = duration;
        bk.last_dp = sim.add(t);
        return bk.last_dp;
      };
      auto gather_for = [&](const ScheduledBlock& b) {
        const ChunkInputs& ch = st.chunks[size_t(b.chunk)];
        if (in.zero < 3 || ch.param_gather <= 0 || b.phase == Phase::WeightGrad) return -1;
        if (st.gather_once && (b.phase != Phase::Forward || b.micro_batch != 0)) return -1;
        const Seconds gather = b.phase == Phase::Forward ? ch.param_gather : ch.param_gather_backward;
        return add_dp(TaskKind::ParamGather, gather, b.chunk, b.micro_batch, 0);
      };

      if (!order.empty()) gather_next = gather_for(order[0]);
      for (size_t k = 0; k < order.size(); ++k) {
        const ScheduledBlock& b = order[k];
        const ChunkInputs& ch = st.chunks[size_t(b.chunk)];
        Task t;
        t.rank = s;
        t.stream = Stream::Compute;
        t.kind = kind_of(b.phase);
        t.chunk = b.chunk;
        t.micro_batch = b.micro_batch;
        t.duration = cost_of(ch, b.phase).duration();
        const bool reduce_now = b.phase == grad_phase && (st.reduce_every_micro_batch || b.micro_batch == m - 1);
        if (reduce_now && in.dp_overlap != DpOverlap::None) t.duration += ch.reduction_copy;
        // The block that a ZeRO-3 gather feeds copies its parameters out first (FSDP2).
        if (gather_next >= 0) t.duration += b.phase == Phase::Forward ? ch.gather_copy_out : ch.gather_copy_out_backward;
        const int id = sim.add(t);
        block[at(s, b.chunk, b.micro_batch, b.phase)] = id;
        bk.blocks.push_back(id);
        // Blocking point-to-point (1F1B, DeepSpeed) waits for the last send; overlapped sends
        // (Megatron's interleaved overlap_p2p_comm) only hold up their consumer.
        if (pending_send >= 0 && !in.p2p_overlap) sim.depend(id, pending_send);
        pending_send = -1;
        bk.last_compute = id;

        // ZeRO-3: the block starts once its first layer's parameters are gathered and cannot end
        // before the last layer's are; a backward block's gather is prefetched one layer ahead, as
        // this block's last layer starts (FSDP's backward prefetch).
        // Synchronous ZeRO-3 (legacy DeepSpeed): the GPU waits for every collective and each
        // collective for the GPU, so the block starts after its whole gather, its reductions run
        // after it, and the next gather after those.
        const bool sync = st.synchronous_dp;
        if (gather_next >= 0) {
          sim.depend(id, gather_next, sync ? 1.0 : 1.0 / std::max(1, ch.layers));
          sim.finish_after(id, gather_next);
        }
        gather_next = -1;
        // The DP stream runs its collectives in issue order: the next block's gather goes in among
        // this block's reductions where it is issued, so reductions issued before it do not queue
        // behind it (and the ones after it do).
        const double issue_at = sync || k + 1 >= order.size() || order[k + 1].phase == Phase::Forward
                                    ? 1.0
                                    : 1.0 - 1.0 / std::max(1, ch.layers);
        bool prefetched = false;
        auto prefetch_next = [&](int after_reduction) {
          if (k + 1 >= order.size()) return;
          gather_next = gather_for(order[k + 1]);
          if (gather_next < 0) return;
          // A forward's first gather is issued when that forward starts (FSDP prefetches within a
          // pass, not across micro-batches), so it waits for this block to end.
          sim.depend(gather_next, id, issue_at);
          if (after_reduction >= 0) sim.depend(gather_next, after_reduction);
        };

        // Gradient reduction: per layer or bucket as the layers of this block finish (reverse order
        // within the block, so the j-th reduction is ready after (j+1)/n of the block), on the last
        // micro-batch only (DDP's no_sync) unless ZeRO-2/3 reduce every micro-batch.
        int last_reduction = -1;
        if (b.phase == grad_phase) {
          if (in.dp_overlap == DpOverlap::None) {
            if (++grads_done[size_t(b.micro_batch)] == v && reduce_now && st.full_reduction > 0)
              sim.depend(last_reduction = add_dp(TaskKind::GradReduce, st.full_reduction, b.chunk, b.micro_batch, 0), id);
          } else if (reduce_now && ch.reductions > 0 && ch.reduction > 0) {
            for (int j = 0; j < ch.reductions; ++j) {
              const double ready = sync ? 1.0 : double(j + 1) / ch.reductions;
              if (!prefetched && ready > issue_at) prefetch_next(-1), prefetched = true;
              sim.depend(last_reduction = add_dp(TaskKind::GradReduce, ch.reduction, b.chunk, b.micro_batch, j), id, ready);
            }
          }
        }
        if (!prefetched) prefetch_next(sync ? last_reduction : -1);

        const bool sends = b.phase == Phase::Forward ? !is_last_virtual(s, b.chunk)
                                                       : b.phase == Phase::Backward && !is_first_virtual(s, b.chunk);
        if (sends && st.send > 0) {
          Task x;
          x.rank = s;
          x.stream = Stream::PP;
          x.kind = b.phase == Phase::Forward ? TaskKind::SendActivation : TaskKind::SendGradient;
          x.link = in.pp_link;
          x.chunk = b.chunk;
          x.micro_batch = b.micro_batch;
          x.duration = st.send;
          const int sid = sim.add(x);
          sim.depend(sid, id);
          send[at(s, b.chunk, b.micro_batch, b.phase)] = sid;
          pending_send = sid;
          bk.last_compute = sid;
        }
      }
    }

    // Data flow between stages: a block waits for its producer's send (or the producer itself when
    // sends are free).
    auto producer = [&](int s, int c, Count mb, Phase ph) {
      const size_t i = at(s, c, mb, ph);
      return send[i] >= 0 ? send[i] : block[i];
    };
    for (int s = 0; s < p; ++s)
      for (int c = 0; c < v; ++c)
        for (Count mb = 0; mb < m; ++mb) {
          const int f = block[at(s, c, mb, Phase::Forward)];
          if (!is_first_virtual(s, c)) sim.depend(f, s > 0 ? producer(s - 1, c, mb, Phase::Forward) : producer(p - 1, c - 1, mb, Phase::Forward));
          const int bwd = block[at(s, c, mb, Phase::Backward)];
          if (is_last_virtual(s, c)) sim.depend(bwd, f);
          else sim.depend(bwd, s < p - 1 ? producer(s + 1, c, mb, Phase::Backward) : producer(0, c + 1, mb, Phase::Backward));
          if (split) sim.depend(block[at(s, c, mb, Phase::WeightGrad)], bwd);
        }

    // The optimizer step waits for every stage's gradients: the global gradient norm for clipping
    // is an all-reduce over all ranks (Megatron-LM clip_grad_norm).
    optimizer.assign(size_t(p), -1);
    for (int s = 0; s < p; ++s) {
      Task t;
      t.rank = s;
      t.kind = TaskKind::Optimizer;
      t.duration = in.stages[size_t(s)].optimizer;
      optimizer[size_t(s)] = sim.add(t);
      for (const StageBookkeeping& other : book) {
        if (other.last_compute >= 0) sim.depend(optimizer[size_t(s)], other.last_compute);
        if (other.last_dp >= 0) sim.depend(optimizer[size_t(s)], other.last_dp);
      }
    }
    post_gather.assign(size_t(p), -1);
    for (int s = 0; s < p; ++s) {
      const Seconds g = in.stages[size_t(s)].post_step_gather;
      if (g <= 0) continue;
      Task t;
      t.rank = s;
      t.stream = Stream::DP;
      t.kind = TaskKind::ParamGather;
      t.link = in.dp_link;
      t.index = -1;
      t.duration = g;
      post_gather[size_t(s)] = sim.add(t);
      sim.depend(post_gather[size_t(s)], optimizer[size_t(s)]);
    }

    sim.run();
  };

  // Compute that runs under a DP collective is slower (overlap::hiding_cost): play the step once,
  // measure how long each compute block overlapped its rank's DP stream, lengthen each block by
  // that overlap times the slowdown and play the same graph again (one fixed-point step).
  build();
  if (in.overlap_slowdown > 0) {
    const std::vector<Task>& first = sim.tasks();
    bool any = false;
    // Each rank's DP stream, in time order (one pass over the tasks, not one per rank).
    std::vector<std::vector<std::pair<Seconds, Seconds>>> dp_of(static_cast<size_t>(p));
    for (const Task& t : first)
      if (t.stream == Stream::DP && t.index >= 0 && t.end > t.start) dp_of[size_t(t.rank)].emplace_back(t.start, t.end);
    for (int s = 0; s < p; ++s) {
      std::vector<std::pair<Seconds, Seconds>>& dp = dp_of[size_t(s)];
      std::sort(dp.begin(), dp.end());
      size_t j = 0;
      for (int id : book[size_t(s)].blocks) {  // compute blocks, in time order on one stream
        const Task& b = first[size_t(id)];
        while (j < dp.size() && dp[j].second <= b.start) ++j;
        Seconds overlapped = 0;
        for (size_t k = j; k < dp.size() && dp[k].first < b.end; ++k)
          overlapped += std::max(0.0, std::min(b.end, dp[k].second) - std::max(b.start, dp[k].first));
        // Only the duration changes; the first play's start and end stay readable until the rerun.
        if (overlapped > 0) sim.task(id).duration += in.overlap_slowdown * overlapped;
        any = any || overlapped > 0;
      }
    }
    if (any) sim.run();
  }
  const std::vector<Task>& tasks = sim.tasks();

  SimulationResult r;
  r.step_time = sim.makespan();
  r.stages.resize(size_t(p));
  std::vector<std::vector<int>> tasks_of(static_cast<size_t>(p));  // task ids by rank, in id order
  for (size_t i = 0; i < tasks.size(); ++i) tasks_of[size_t(tasks[i].rank)].push_back(int(i));
  for (int s = 0; s < p; ++s) {
    const StageInputs& st = in.stages[size_t(s)];
    StageSimulation& ss = r.stages[size_t(s)];
    ss.stage = s;
    ss.static_memory = st.static_memory;
    std::vector<std::pair<Seconds, Bytes>> deltas;     // activation memory changes
    std::vector<std::pair<Seconds, double>> in_flight;  // micro-batch (chunk) count changes
    Seconds dp_waits = 0, hiding = 0;  // hiding: DP costs inside compute blocks
    for (int id : book[size_t(s)].blocks) {
      const Task& t = tasks[size_t(id)];
      const ChunkInputs& ch = st.chunks[size_t(t.chunk)];
      const Phase ph = t.kind == TaskKind::Forward ? Phase::Forward
                       : t.kind == TaskKind::Backward ? Phase::Backward
                                                      : Phase::WeightGrad;
      const BlockCost& c = cost_of(ch, ph);
      // What the DP traffic added to the block: the compute lost to hidden collectives and
      // per-layer flatten copies.
      hiding += std::max(0.0, t.duration - c.duration());
      ss.compute += c.compute;
      ss.recompute += c.recompute;
      ss.dispatch_overhead += c.overhead;
      ss.tp_comm += c.tp_exposed;
      ss.cp_comm += c.cp_exposed;
      ss.ep_comm += c.ep;
      dp_waits += std::max(0.0, (t.end - t.start) - t.duration);  // ZeRO-3 gathers that outlast the block
      ss.compute_end = std::max(ss.compute_end, t.end);
      // Activations are saved from the start of the forward and freed when the backward that
      // consumes them ends (ZB-H1's W keeps only GEMM inputs; counted as freed with B).
      if (ph == Phase::Forward) {
        deltas.emplace_back(t.start, ch.activations);
        in_flight.emplace_back(t.start, 1.0 / v);
      } else if (ph == Phase::Backward) {
        deltas.emplace_back(t.end, -ch.activations);
        in_flight.emplace_back(t.end, -1.0 / v);
      }
    }
    Seconds dp_end = 0, dp_busy = 0;
    for (int id : tasks_of[size_t(s)]) {
      const Task& t = tasks[size_t(id)];
      if (t.stream == Stream::PP) {
        ss.pp_comm += t.end - t.start;
        ss.compute_end = std::max(ss.compute_end, t.end);
      }
      if (t.stream == Stream::DP && t.index >= 0) {
        dp_end = std::max(dp_end, t.end);
        dp_busy += t.end - t.start;
      }
    }
    const Task& opt = tasks[size_t(optimizer[size_t(s)])];
    ss.optimizer = opt.end - opt.start;
    // Synchronous ZeRO-3 overlaps nothing: every collective is exposed.
    ss.dp_comm = st.synchronous_dp ? dp_busy : hiding + dp_waits + std::max(0.0, dp_end - ss.compute_end);
    if (post_gather[size_t(s)] >= 0) ss.dp_comm += tasks[size_t(post_gather[size_t(s)])].end - opt.end;
    const Seconds busy = ss.compute + ss.dispatch_overhead + ss.tp_comm + ss.cp_comm + ss.ep_comm + ss.pp_comm + ss.dp_comm + ss.optimizer;
    ss.bubble = std::max(0.0, r.step_time - busy);
    // Without a pipeline nothing but the DP stream (ZeRO-3's gathers) keeps the compute waiting:
    // that idle time is exposed DP communication, not a pipeline bubble.
    if (p == 1) {
      ss.dp_comm += ss.bubble;
      ss.bubble = 0;
    }

    // Frees before allocations at the same instant: a forward that starts as a backward ends
    // reuses that memory.
    auto by_time = [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second < b.second; };
    std::sort(deltas.begin(), deltas.end(), by_time);
    std::sort(in_flight.begin(), in_flight.end(), by_time);
    Bytes running = 0;
    ss.peak_memory = st.static_memory;
    ss.memory.push_back({0, st.static_memory});
    for (const auto& [time, delta] : deltas) {
      running += delta;
      ss.memory.push_back({time, st.static_memory + running});
      if (st.static_memory + running > ss.peak_memory) {
        ss.peak_memory = st.static_memory + running;
        ss.peak_time = time;
      }
    }
    double count = 0;
    for (const auto& [time, delta] : in_flight) {
      count += delta;
      ss.peak_in_flight = std::max(ss.peak_in_flight, count);
    }
  }

  // The breakdown of the busiest stage, as predict reports its bottleneck stage.
  for (int s = 1; s < p; ++s) {
    auto busy = [&](const StageSimulation& x) { return x.compute + x.dispatch_overhead + x.tp_comm + x.cp_comm + x.ep_comm + x.pp_comm; };
    if (busy(r.stages[size_t(s)]) > busy(r.stages[size_t(r.bottleneck_stage)])) r.bottleneck_stage = s;
  }
  const StageSimulation& b = r.stages[size_t(r.bottleneck_stage)];
  TimeBreakdown& t = r.breakdown;
  t.compute = b.compute;
  t.recompute = b.recompute;
  t.dispatch_overhead = b.dispatch_overhead;
  t.tp_comm = b.tp_comm;
  t.cp_comm = b.cp_comm;
  t.ep_comm = b.ep_comm;
  t.pp_comm = b.pp_comm;
  t.dp_comm = b.dp_comm;
  t.optimizer = b.optimizer;
  t.bubble = b.bubble;
  t.step = r.step_time;
  if (in.record_tasks) {
    r.tasks = tasks;
    r.inputs = in.stages;
  }
  return r;
}

}  // namespace sixfold
