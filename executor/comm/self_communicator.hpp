#pragma once
// A group of one rank: collectives are copies, and a send to oneself is queued for the matching
// receive (a pipeline of one stage never sends, but keep it correct).
#include <deque>
#include <vector>

#include "executor/comm/communicator.hpp"

namespace sixfold {

class SelfCommunicator : public Communicator {
 public:
  explicit SelfCommunicator(std::string name = "world") : name_(std::move(name)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override;
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
  std::string name_;
  std::deque<std::pair<int, std::vector<char>>> queued_;  // (tag, bytes)
};

}  // namespace sixfold
