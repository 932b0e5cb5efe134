#include "executor/backend/cpu/guarded_storage.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace sixfold {

namespace {
std::size_t page_round(std::size_t bytes) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
}  // namespace

GuardedHostStorage::~GuardedHostStorage() {
  for (auto& [p, bytes] : live_) munmap(p, bytes);
}

void GuardedHostStorage::protect(void* page, std::size_t bytes, bool accessible) const {
  if (mprotect(page, bytes, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
    throw Error(std::string("guarded storage: mprotect failed: ") + std::strerror(errno));
}

void* GuardedHostStorage::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t mapped = page_round(bytes);
  void* p = mmap(nullptr, mapped, depth_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error(std::string("guarded storage: mmap failed: ") + std::strerror(errno));
  live_[p] = mapped;
  return p;
}

void GuardedHostStorage::release(void* pointer, std::size_t) noexcept {
  auto it = live_.find(pointer);
  if (it == live_.end()) return;
  munmap(it->first, it->second);
  live_.erase(it);
}

void GuardedHostStorage::upload(void* dst, const void* src, std::size_t bytes) {
  OpenWindow w(this);
  if (bytes > 0) std::memcpy(dst, src, bytes);
}
void GuardedHostStorage::download(void* dst, const void* src, std::size_t bytes) {
  OpenWindow w(this);
  if (bytes > 0) std::memcpy(dst, src, bytes);
}
void GuardedHostStorage::copy(void* dst, const void* src, std::size_t bytes) {
  OpenWindow w(this);
  if (bytes > 0) std::memmove(dst, src, bytes);
}
void GuardedHostStorage::zero(void* dst, std::size_t bytes) {
  OpenWindow w(this);
  if (bytes > 0) std::memset(dst, 0, bytes);
}

void GuardedHostStorage::open() {
  if (depth_++ > 0) return;
  ++openings_;
  for (auto& [p, bytes] : live_) protect(p, bytes, true);
}

void GuardedHostStorage::close() noexcept {
  if (--depth_ > 0) return;
  for (auto& [p, bytes] : live_) mprotect(p, bytes, PROT_NONE);
}

namespace {

class GuardedPending : public PendingOp {
 public:
  GuardedPending(std::unique_ptr<PendingOp> inner, AccessWindow& w) : inner_(std::move(inner)), w_(w) {}
  void wait() override {
    OpenWindow open(&w_);
    inner_->wait();
  }

 private:
  std::unique_ptr<PendingOp> inner_;
  AccessWindow& w_;
};

class GuardedCommunicator : public Communicator {
 public:
  GuardedCommunicator(std::unique_ptr<Communicator> inner, AccessWindow& w) : inner_(std::move(inner)), w_(w) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& name() const override { return inner_->name(); }
  bool spans_processes() const override { return inner_->spans_processes(); }
  void use_storage(DeviceStorage& storage) override { inner_->use_storage(storage); }
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override {
    return std::make_unique<GuardedCommunicator>(inner_->split(color, key, name), w_);
  }
  void all_reduce(void* buffer, long count, ElemType type, ReduceOp op) override {
    OpenWindow open(&w_);
    inner_->all_reduce(buffer, count, type, op);
  }
  std::unique_ptr<PendingOp> start_all_reduce(void* buffer, long count, ElemType type) override {
    OpenWindow open(&w_);
    return std::make_unique<GuardedPending>(inner_->start_all_reduce(buffer, count, type), w_);
  }
  void all_gather(const void* send, void* recv, long count, ElemType type) override {
    OpenWindow open(&w_);
    inner_->all_gather(send, recv, count, type);
  }
  void reduce_scatter(const void* send, void* recv, long count, ElemType type) override {
    OpenWindow open(&w_);
    inner_->reduce_scatter(send, recv, count, type);
  }
  void all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                    ElemType type) override {
    OpenWindow open(&w_);
    inner_->all_to_all_v(send, send_counts, recv, recv_counts, type);
  }
  void broadcast(void* buffer, long count, ElemType type, int root) override {
    OpenWindow open(&w_);
    inner_->broadcast(buffer, count, type, root);
  }
  void send(const void* buffer, long count, ElemType type, int peer, int tag) override {
    OpenWindow open(&w_);
    inner_->send(buffer, count, type, peer, tag);
  }
  void recv(void* buffer, long count, ElemType type, int peer, int tag) override {
    OpenWindow open(&w_);
    inner_->recv(buffer, count, type, peer, tag);
  }
  void wait_sends() override {
    OpenWindow open(&w_);
    inner_->wait_sends();
  }
  void barrier() override { inner_->barrier(); }

 private:
  std::unique_ptr<Communicator> inner_;
  AccessWindow& w_;
};

}  // namespace

std::unique_ptr<Communicator> guard_communicator(std::unique_ptr<Communicator> inner, AccessWindow& window) {
  return std::make_unique<GuardedCommunicator>(std::move(inner), window);
}

}  // namespace sixfold
