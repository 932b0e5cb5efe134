#pragma once
// Byte accounting of the executor's own allocator, by category. Every tensor the runtime holds is
// a TrackedBuffer that reports its bytes on allocation and release, so that the peak per category
// is measured, not estimated. What each category holds is documented in README-memory.md.
#include <array>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "executor/backend/device_storage.hpp"

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
  // Where the tracked buffers live (host memory unless a backend says otherwise).
  DeviceStorage& storage() const { return *storage_; }
  void set_storage(DeviceStorage* storage) { storage_ = storage; }

 private:
  DeviceStorage* storage_ = &host_storage();
  std::array<Bytes, kMemoryCategoryCount> current_{}, peak_{};
  Bytes peak_total_ = 0;
};

// A contiguous array of T in the tracker's storage (device memory on a GPU backend) whose bytes
// are charged to one category of the tracker while it lives. The host reads or writes it only
// through upload/download (or the backend's ops): data() is a pointer into the backend's memory.
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
      data_ = o.data_;
      size_ = o.size_;
      tracker_ = o.tracker_;
      storage_ = o.storage_;
      category_ = o.category_;
      o.data_ = nullptr;
      o.size_ = 0;
      o.tracker_ = nullptr;
    }
    return *this;
  }
  ~TrackedBuffer() { free(); }

  // Allocates n zero-initialised elements (releasing what was held before); a null tracker
  // allocates host memory, uncharged.
  void reset(MemoryTracker* tracker, MemoryCategory category, long n) {
    free();
    tracker_ = tracker;
    storage_ = tracker ? &tracker->storage() : &host_storage();
    category_ = category;
    if (n <= 0) return;
    data_ = static_cast<T*>(storage_->allocate(bytes_of(n)));
    size_ = n;
    if (tracker_) tracker_->allocate(category_, Bytes(bytes_of(n)));
  }
  void free() {
    if (!data_) return;
    storage_->release(data_, bytes_of(size_));
    if (tracker_) tracker_->release(category_, Bytes(bytes_of(size_)));
    data_ = nullptr;
    size_ = 0;
  }
  void zero() {
    if (data_) storage_->zero(data_, bytes_of(size_));
  }
  // Host copies in and out: n elements at element `offset`.
  void upload(const T* host, long n, long offset = 0) { storage_->upload(data_ + offset, host, bytes_of(n)); }
  void download(T* host, long n, long offset = 0) const { storage_->download(host, data_ + offset, bytes_of(n)); }
  std::vector<T> to_host() const {
    std::vector<T> h(size_);
    if (size_ > 0) download(h.data(), size_);
    return h;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  long size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static std::size_t bytes_of(long n) { return std::size_t(n) * sizeof(T); }
  T* data_ = nullptr;
  long size_ = 0;
  MemoryTracker* tracker_ = nullptr;
  DeviceStorage* storage_ = nullptr;
  MemoryCategory category_ = MemoryCategory::Buffers;
};

}  // namespace sixfold
