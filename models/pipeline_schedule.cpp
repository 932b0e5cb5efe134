#include "models/pipeline_schedule.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace sixfold {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward: return "F";
    case Phase::Backward: return "B";
    case Phase::WeightGrad: return "W";
  }
  return "?";
}

namespace {

std::vector<ScheduledBlock> gpipe(Count m) {
  std::vector<ScheduledBlock> out;
  for (Count i = 0; i < m; ++i) out.push_back({0, i, Phase::Forward});
  for (Count i = 0; i < m; ++i) out.push_back({0, i, Phase::Backward});
  return out;
}

std::vector<ScheduledBlock> one_f_one_b(int p, Count m, int s) {
  std::vector<ScheduledBlock> out;
  const Count warmup = warmup_forwards(Schedule::OneFOneB, p, 1, m, s);
  for (Count i = 0; i < warmup; ++i) out.push_back({0, i, Phase::Forward});
  for (Count i = 0; i < m - warmup; ++i) {
    out.push_back({0, warmup + i, Phase::Forward});
    out.push_back({0, i, Phase::Backward});
  }
  for (Count i = m - warmup; i < m; ++i) out.push_back({0, i, Phase::Backward});
  return out;
}

// ZB-H1: the 1F1B order with each backward split into B and W. W(i) follows B(i), except that
// stage s defers the W's of its last s micro-batches to the end: the backward wave reaches stage s
// s backward-times before stage 0, so those W's run in what 1F1B leaves as the cool-down bubble,
// while the B's they would have delayed reach the earlier stages sooner (Qi et al. 2024, fig. 3).
std::vector<ScheduledBlock> zero_bubble_h1(int p, Count m, int s) {
  std::vector<ScheduledBlock> out;
  const Count warmup = warmup_forwards(Schedule::ZeroBubble, p, 1, m, s);
  const Count trailing = std::min<Count>(s, m);
  auto backward = [&](Count i) {
    out.push_back({0, i, Phase::Backward});
    if (i < m - trailing) out.push_back({0, i, Phase::WeightGrad});
  };
  for (Count i = 0; i < warmup; ++i) out.push_back({0, i, Phase::Forward});
  for (Count i = 0; i < m - warmup; ++i) {
    out.push_back({0, warmup + i, Phase::Forward});
    backward(i);
  }
  for (Count i = m - warmup; i < m; ++i) backward(i);
  for (Count i = m - trailing; i < m; ++i) out.push_back({0, i, Phase::WeightGrad});
  return out;
}

// Megatron-LM's interleaved order: the k-th forward chunk-block is chunk (k / p) % v of
// micro-batch (k / (p v)) p + k % p; backward the same with the chunk reversed.
std::vector<ScheduledBlock> interleaved(int p, int v, Count m, int s) {
  if (m % p != 0)
    throw LayoutError("interleaved schedule needs micro-batches divisible by pp",
                      "micro-batches=" + std::to_string(m) + ", pp=" + std::to_string(p));
  const Count total = m * v;
  auto block = [&](Count k, bool forward) {
    const Count group = k / p;
    const int chunk = int(group % v);
    const Count mb = (group / v) * p + k % p;
    return ScheduledBlock{forward ? chunk : v - 1 - chunk, mb, forward ? Phase::Forward : Phase::Backward};
  };
  const Count warmup = warmup_forwards(Schedule::Interleaved, p, v, m, s);
  std::vector<ScheduledBlock> out;
  for (Count k = 0; k < warmup; ++k) out.push_back(block(k, true));
  for (Count k = 0; k < total - warmup; ++k) {
    out.push_back(block(warmup + k, true));
    out.push_back(block(k, false));
  }
  for (Count k = total - warmup; k < total; ++k) out.push_back(block(k, false));
  return out;
}

}  // namespace

Count warmup_forwards(Schedule schedule, int p, int v, Count m, int s) {
  switch (schedule) {
    case Schedule::GPipe: return m;
    case Schedule::Interleaved:
      // Megatron-LM schedules.py, get_num_warmup_microbatches: (p - rank - 1) * 2 + (v - 1) * p.
      if (v > 1) return std::min<Count>(m * v, Count(p - s - 1) * 2 + Count(v - 1) * p);
      [[fallthrough]];
    case Schedule::OneFOneB:
    case Schedule::ZeroBubble: return std::min<Count>(p - s - 1, m);
  }
  return 0;
}

Count peak_held_blocks(Schedule schedule, int p, int v, Count m, int s) {
  const Count blocks = m * (schedule == Schedule::Interleaved ? v : 1);
  return std::min<Count>(blocks, warmup_forwards(schedule, p, v, m, s) + 1);
}

std::vector<ScheduledBlock> stage_order(Schedule schedule, int p, int v, Count m, int s) {
  switch (schedule) {
    case Schedule::GPipe: return gpipe(m);
    case Schedule::OneFOneB: return one_f_one_b(p, m, s);
    case Schedule::ZeroBubble: return zero_bubble_h1(p, m, s);
    case Schedule::Interleaved: return v > 1 ? interleaved(p, v, m, s) : one_f_one_b(p, m, s);
  }
  return {};
}

}  // namespace sixfold
