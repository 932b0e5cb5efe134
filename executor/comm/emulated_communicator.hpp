#pragma once
// One rank of a bigger layout, run alone (`sixfold run --emulate-rank R`): this process plays
// world rank R of layout.gpus() ranks, with that rank's shards, compute and memory, and every
// communication replaced by a local copy of the same buffers:
//   all_reduce, broadcast, barrier  leave the buffer as it is (this rank's part stands for the sum)
//   all_gather                      this rank's block copied into every rank's slot
//   reduce_scatter                  this rank's block of the input
//   all_to_all_v                    block i of the input into block i of the output
//   recv                            the last message this rank sent of the same size (else zeros)
// The losses are therefore not a training run's, and communication times are modeled elsewhere,
// never measured here. The copies go through the backend's storage (use_storage), so the buffers
// may be GPU memory. Groups follow MPI_Comm_split semantics exactly: the colors and keys of
// every world rank are recorded by running make_process_groups once per rank.
#include <deque>
#include <vector>

#include "executor/backend/device_storage.hpp"
#include "executor/comm/communicator.hpp"
#include "models/layout.hpp"

namespace sixfold {

class EmulatedCommunicator : public Communicator {
 public:
  // A group of `size` ranks of which this process is `rank`. split_table[i] is, for the i-th split
  // called on this communicator, every member's (color, key) in member order (empty: not splittable).
  EmulatedCommunicator(int rank, int size, std::string name,
                       std::vector<std::vector<std::pair<int, int>>> split_table = {});
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override;
  bool spans_processes() const override { return false; }
  void use_storage(DeviceStorage& storage) override { storage_ = &storage; }
  void all_reduce(void*, long, ElemType, ReduceOp) override {}
  std::unique_ptr<PendingOp> start_all_reduce(void*, long, ElemType) override;
  void all_gather(const void* send, void* recv, long count, ElemType type) override;
  void reduce_scatter(const void* send, void* recv, long count, ElemType type) override;
  void all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                    ElemType type) override;
  void broadcast(void*, long, ElemType, int) override {}
  void send(const void* buffer, long count, ElemType type, int peer, int tag) override;
  void recv(void* buffer, long count, ElemType type, int peer, int tag) override;
  void wait_sends() override {}
  void barrier() override {}

 private:
  int rank_, size_;
  std::string name_;
  std::vector<std::vector<std::pair<int, int>>> split_table_;
  std::size_t splits_done_ = 0;
  std::deque<std::vector<char>> sent_;  // the last few messages sent, newest last (host copies)
  DeviceStorage* storage_;              // where the buffers live: host memory until a backend says
};

// The world of rank `rank` of `layout`, ready for make_process_groups. UsageError when rank is
// out of range.
std::unique_ptr<Communicator> make_emulated_world(const Layout& layout, int rank);

}  // namespace sixfold
