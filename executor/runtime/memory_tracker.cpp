#include "executor/runtime/memory_tracker.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace sixfold {

std::string to_string(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::Weights: return "weights";
    case MemoryCategory::Gradients: return "gradients";
    case MemoryCategory::Optimizer: return "optimizer";
    case MemoryCategory::Activations: return "activations";
    case MemoryCategory::Buffers: return "buffers";
  }
  return "?";
}

void MemoryTracker::allocate(MemoryCategory c, Bytes bytes) {
  current_[int(c)] += bytes;
  peak_[int(c)] = std::max(peak_[int(c)], current_[int(c)]);
  peak_total_ = std::max(peak_total_, current_total());
}

void MemoryTracker::release(MemoryCategory c, Bytes bytes) {
  if (bytes > current_[int(c)])
    throw Error("memory tracker: releasing " + std::to_string(bytes) + " bytes of " + to_string(c) + " but only " +
                std::to_string(current_[int(c)]) + " are held");
  current_[int(c)] -= bytes;
}

Bytes MemoryTracker::current_total() const {
  Bytes total = 0;
  for (Bytes b : current_) total += b;
  return total;
}

void MemoryTracker::reset_peaks() {
  peak_ = current_;
  peak_total_ = current_total();
}

}  // namespace sixfold
