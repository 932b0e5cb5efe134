#pragma once
// Byte accounting of the executor's own allocator, by category. Every tensor the runtime holds is
// a TrackedBuffer that reports its bytes on allocation and release, so that the peak per category
// is measured, not estimated. What each category holds is documented in README-memory.md.
#include <array>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace sixfold {

enum class MemoryCategory { Weights, Gradients, Optimizer, Activations, Buffers };
inline constexpr int kMemoryCategoryCount = 5;
std::string to_string(MemoryCategory c);

class MemoryTracker {
 public:
  void allocate(MemoryCategory c, Bytes bytes);
  void release(MemoryCategory c, Bytes bytes);
  Bytes current(MemoryCategory c) const { return current_[int(c)]; }
  Bytes peak(MemoryCategory c) const { return peak_[int(c)]; }
  Bytes peak_total() const { return peak_total_; }
  Bytes current_total() const;
  // Starts a new measurement window (peaks := current), e.g. after the first step.
  void reset_peaks();

 private:
  std::array<Bytes, kMemoryCategoryCount> current_{}, peak_{};
  Bytes peak_total_ = 0;
};

// A contiguous array of T whose bytes are charged to one category of a tracker while it lives.
template <class T>
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker* tracker, MemoryCategory category, long n) { reset(tracker, category, n); }
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  TrackedBuffer(TrackedBuffer&& o) noexcept { *this = std::move(o); }
  TrackedBuffer& operator=(TrackedBuffer&& o) noexcept {
    if (this != &o) {
      free();
      data_ = std::move(o.data_);
      tracker_ = o.tracker_;
      category_ = o.category_;
      o.tracker_ = nullptr;
      o.data_.clear();
    }
    return *this;
  }
  ~TrackedBuffer() { free(); }

  // Allocates n zero-initialised elements (releasing what was held before).
  void reset(MemoryTracker* tracker, MemoryCategory category, long n) {
    free();
    tracker_ = tracker;
    category_ = category;
    data_.assign(n, T(0));
    data_.shrink_to_fit();
    if (tracker_) tracker_->allocate(category_, Bytes(n) * sizeof(T));
  }
  void free() {
    if (tracker_ && !data_.empty()) tracker_->release(category_, Bytes(data_.size()) * sizeof(T));
    data_.clear();
    data_.shrink_to_fit();
  }
  void zero() { std::fill(data_.begin(), data_.end(), T(0)); }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  long size() const { return long(data_.size()); }
  bool empty() const { return data_.empty(); }
  T& operator[](long i) { return data_[i]; }
  const T& operator[](long i) const { return data_[i]; }

 private:
  std::vector<T> data_;
  MemoryTracker* tracker_ = nullptr;
  MemoryCategory category_ = MemoryCategory::Buffers;
};

}  // namespace sixfold
