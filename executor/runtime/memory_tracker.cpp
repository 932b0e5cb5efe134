#include "executor/runtime/memory_tracker.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/error.hpp"

namespace sixfold {

namespace {
class HostStorage : public DeviceStorage {
 public:
  void* allocate(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = std::calloc(1, bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* pointer, std::size_t) noexcept override { std::free(pointer); }
  void upload(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes > 0) std::memmove(dst, src, bytes);
  }
  void zero(void* dst, std::size_t bytes) override {
    if (bytes > 0) std::memset(dst, 0, bytes);
  }
};
}  // namespace

DeviceStorage& host_storage() {
  static HostStorage storage;
  return storage;
}

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
