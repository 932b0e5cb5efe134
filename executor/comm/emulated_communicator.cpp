#include "executor/comm/emulated_communicator.hpp"

#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "executor/runtime/process_groups.hpp"

namespace sixfold {

namespace {

class DonePendingOp : public PendingOp {
 public:
  void wait() override {}
};

// Records the (color, key) of each split make_process_groups asks of one world rank; every
// other call is a programming error (make_process_groups only splits).
class SplitRecorder : public Communicator {
 public:
  SplitRecorder(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  std::unique_ptr<Communicator> split(int color, int key, const std::string&) override {
    calls.emplace_back(color, key);
    return std::make_unique<SplitRecorder>(0, 1);
  }
  void all_reduce(void*, long, ElemType, ReduceOp) override { refuse(); }
  std::unique_ptr<PendingOp> start_all_reduce(void*, long, ElemType) override { refuse(); }
  void all_gather(const void*, void*, long, ElemType) override { refuse(); }
  void reduce_scatter(const void*, void*, long, ElemType) override { refuse(); }
  void all_to_all_v(const void*, const long*, void*, const long*, ElemType) override { refuse(); }
  void broadcast(void*, long, ElemType, int) override { refuse(); }
  void send(const void*, long, ElemType, int, int) override { refuse(); }
  void recv(void*, long, ElemType, int, int) override { refuse(); }
  void wait_sends() override { refuse(); }
  void barrier() override { refuse(); }
  std::vector<std::pair<int, int>> calls;

 private:
  [[noreturn]] static void refuse() { throw Error("emulated rank: process groups may only split the world"); }
  int rank_, size_;
  std::string name_ = "split recorder";
};

}  // namespace

EmulatedCommunicator::EmulatedCommunicator(int rank, int size, std::string name,
                                           std::vector<std::vector<std::pair<int, int>>> split_table)
    : rank_(rank), size_(size), name_(std::move(name)), split_table_(std::move(split_table)), storage_(&host_storage()) {}

std::unique_ptr<Communicator> EmulatedCommunicator::split(int color, int key, const std::string& name) {
  if (splits_done_ >= split_table_.size())
    throw Error("emulated rank: " + name_ + " was split more often than make_process_groups does");
  const auto& members = split_table_[splits_done_++];
  if (members.at(rank_) != std::pair{color, key})
    throw Error("emulated rank: split " + std::to_string(splits_done_) + " of " + name_ +
                " differs from the recorded one (make_process_groups is not deterministic?)");
  // MPI_Comm_split: the members of my color, ordered by key, then by old rank.
  std::vector<std::pair<int, int>> group;  // (key, old rank)
  for (int r = 0; r < int(members.size()); ++r)
    if (members[r].first == color) group.emplace_back(members[r].second, r);
  std::sort(group.begin(), group.end());
  const int my_rank = int(std::find(group.begin(), group.end(), std::pair{key, rank_}) - group.begin());
  auto child = std::make_unique<EmulatedCommunicator>(my_rank, int(group.size()), name + " (emulated)");
  child->use_storage(*storage_);
  return child;
}

std::unique_ptr<PendingOp> EmulatedCommunicator::start_all_reduce(void*, long, ElemType) {
  return std::make_unique<DonePendingOp>();
}

void EmulatedCommunicator::all_gather(const void* send, void* recv, long count, ElemType type) {
  const long bytes = count * elem_size(type);
  for (int r = 0; r < size_; ++r) {
    char* slot = static_cast<char*>(recv) + r * bytes;
    if (slot != send) storage_->copy(slot, send, bytes);
  }
}

void EmulatedCommunicator::reduce_scatter(const void* send, void* recv, long count, ElemType type) {
  const long bytes = count * elem_size(type);
  const char* mine = static_cast<const char*>(send) + rank_ * bytes;
  if (mine != recv) storage_->copy(recv, mine, bytes);
}

void EmulatedCommunicator::all_to_all_v(const void* send, const long* send_counts, void* recv,
                                        const long* recv_counts, ElemType type) {
  const long elem = elem_size(type);
  long send_offset = 0, recv_offset = 0;
  for (int r = 0; r < size_; ++r) {
    const long copied = std::min(send_counts[r], recv_counts[r]);
    char* out = static_cast<char*>(recv) + recv_offset * elem;
    storage_->copy(out, static_cast<const char*>(send) + send_offset * elem, copied * elem);
    storage_->zero(out + copied * elem, (recv_counts[r] - copied) * elem);
    send_offset += send_counts[r];
    recv_offset += recv_counts[r];
  }
}

void EmulatedCommunicator::send(const void* buffer, long count, ElemType type, int, int) {
  sent_.emplace_back(std::size_t(count) * elem_size(type));
  storage_->copy(sent_.back().data(), buffer, sent_.back().size());
  if (sent_.size() > 4) sent_.pop_front();  // a pipeline stage sends at most one per direction in flight
}

void EmulatedCommunicator::recv(void* buffer, long count, ElemType type, int, int) {
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  for (auto it = sent_.rbegin(); it != sent_.rend(); ++it)
    if (it->size() == bytes) {
      storage_->copy(buffer, it->data(), bytes);
      return;
    }
  storage_->zero(buffer, bytes);
}

std::unique_ptr<Communicator> make_emulated_world(const Layout& layout, int rank) {
  const int world = layout.gpus();
  if (rank < 0 || rank >= world)
    throw UsageError("--emulate-rank " + std::to_string(rank) + " is outside the layout's " + std::to_string(world) +
                     " ranks (" + describe(layout) + "; allowed: 0.." + std::to_string(world - 1) + ")");
  // Every rank's splits, as it would ask for them under mpirun.
  std::vector<std::vector<std::pair<int, int>>> table;
  for (int r = 0; r < world; ++r) {
    SplitRecorder recorder(r, world);
    make_process_groups(layout, recorder);
    if (table.empty()) table.resize(recorder.calls.size());
    for (std::size_t i = 0; i < recorder.calls.size(); ++i) table.at(i).push_back(recorder.calls[i]);
  }
  return std::make_unique<EmulatedCommunicator>(rank, world, "world (emulated rank " + std::to_string(rank) + ")",
                                                std::move(table));
}

}  // namespace sixfold
