#pragma once
// Host memory that the process can touch only inside a backend call: every buffer on pages of its
// own (mmap), mapped PROT_NONE while no call is open. A runtime that reads or writes a tensor on
// the host behind the backend's back (a host copy of an activation, a loop over a buffer) dies
// with SIGSEGV under it. The CPU backend made by make_guarded_cpu_backend keeps its tensors here,
// so the CPU build proves what the CUDA backend relies on: the runtime reaches tensors only
// through the backend (tests/executor/test_device_residency.cpp).
#include <cstddef>
#include <map>
#include <memory>

#include "executor/backend/cpu/cpu_ops.hpp"
#include "executor/backend/device_storage.hpp"
#include "executor/comm/communicator.hpp"

namespace sixfold {

class GuardedHostStorage final : public DeviceStorage, public AccessWindow {
 public:
  GuardedHostStorage() = default;
  ~GuardedHostStorage() override;
  GuardedHostStorage(const GuardedHostStorage&) = delete;
  GuardedHostStorage& operator=(const GuardedHostStorage&) = delete;

  void* allocate(std::size_t bytes) override;
  void release(void* pointer, std::size_t bytes) noexcept override;
  void upload(void* dst, const void* src, std::size_t bytes) override;
  void download(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void zero(void* dst, std::size_t bytes) override;

  void open() override;
  void close() noexcept override;
  // Buffers held now, and how many times the window was opened (a test checks it was used).
  std::size_t buffers() const { return live_.size(); }
  long openings() const { return openings_; }

 private:
  void protect(void* page, std::size_t bytes, bool accessible) const;
  std::map<void*, std::size_t> live_;  // page-aligned start -> mapped bytes
  int depth_ = 0;
  long openings_ = 0;
};

// A communicator whose every call runs with the window open (its buffers are guarded memory).
std::unique_ptr<Communicator> guard_communicator(std::unique_ptr<Communicator> inner, AccessWindow& window);

}  // namespace sixfold
