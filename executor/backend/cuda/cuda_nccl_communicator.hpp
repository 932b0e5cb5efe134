#pragma once
// Communicator over NCCL for the CUDA backend: one ncclComm_t per process group (the world from
// a unique id broadcast over the MPI world, the groups by ncclCommSplit), collectives on the
// communication stream of CudaStreams, ordered after compute by an event.
//
// The model runtime hands its tensors in GPU memory (cuda_backend.hpp): NCCL runs on them in place,
// on the communication stream after an event of the compute stream. Host buffers (the MoE token
// counts, the loss, the memory report) are staged: host -> device on the compute stream, the NCCL
// call, device -> host once it is done. Every wait is bounded by the timeout and aborts the NCCL
// communicator before throwing, so a missing peer gives a message, not a hang.
//
// Point-to-point: NCCL has no tags; messages between two ranks match in issue order, which the
// pipeline schedules keep (Megatron-LM relies on the same). A send is staged at once and launched
// together with this rank's next receive in one ncclGroupStart/End, so that two stages that each
// send before they receive (1F1B steady state, the CP ring) do not deadlock; any other operation
// launches the pending sends first.
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/backend/cuda/cuda_device.hpp"

namespace sixfold {

// State shared by the world and every group split from it.
struct NcclShared {
  std::shared_ptr<CudaStreams> streams;
  double timeout_s = 120;
  std::unique_ptr<Communicator> host_world;  // the MPI world the unique id came over; kept alive
  struct Send {
    ncclComm_t comm;
    std::shared_ptr<DeviceStaging> data;
    long count;
    ncclDataType_t type;
    int peer;
    bool launched;
  };
  std::vector<Send> sends;
  Bytes staging_peak = 0;  // sum over the communicators' staging buffers, at its largest
  Bytes staging_now = 0;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, std::string name, std::shared_ptr<NcclShared> shared);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }
  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override;

  void all_reduce(void* buffer, long count, ElemType type, ReduceOp op) override;
  std::unique_ptr<PendingOp> start_all_reduce(void* buffer, long count, ElemType type) override;
  void all_gather(const void* send, void* recv, long count, ElemType type) override;
  void reduce_scatter(const void* send, void* recv, long count, ElemType type) override;
  void all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                    ElemType type) override;
  void broadcast(void* buffer, long count, ElemType type, int root) override;
  void send(const void* buffer, long count, ElemType type, int peer, int tag) override;
  void recv(void* buffer, long count, ElemType type, int peer, int tag) override;
  void wait_sends() override;
  void barrier() override;

  Bytes staging_peak() const { return shared_->staging_peak; }
  ncclComm_t handle() const { return comm_; }
  NcclShared& shared() { return *shared_; }

 private:
  // The device buffers NCCL works on: `send` and `recv` themselves when they are GPU memory, else
  // `send_bytes` and `recv_bytes` of this communicator's staging, the input copied in on the
  // compute stream; the communication stream is made to wait for the compute stream either way.
  std::pair<void*, void*> stage_in(const void* send, std::size_t send_bytes, std::size_t recv_bytes, void* recv);
  // Waits for the communication stream (bounded) and copies `bytes` of `device` to `host` (nothing
  // when NCCL wrote `host` in place).
  void finish(void* host, const void* device, std::size_t bytes, const char* what);
  void launch_pending_sends();
  void grow_staging(std::size_t bytes);

  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1;
  std::string name_;
  std::shared_ptr<NcclShared> shared_;
  DeviceStaging staging_;
};

// The NCCL world over the ranks of `host_world` (an MPI world of more than one rank): rank 0's
// ncclUniqueId is broadcast over it, then every rank joins with ncclCommInitRank on streams->device.
std::unique_ptr<Communicator> make_nccl_world(std::unique_ptr<Communicator> host_world,
                                              std::shared_ptr<CudaStreams> streams, double timeout_s);

}  // namespace sixfold
