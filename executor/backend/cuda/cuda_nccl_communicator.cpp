#include "executor/backend/cuda/cuda_nccl_communicator.hpp"

#include <numeric>

#include "common/error.hpp"

#define CHECK_NCCL(call)                                                                                   \
  do {                                                                                                     \
    const ncclResult_t sixfold_nccl_status_ = (call);                                                      \
    if (sixfold_nccl_status_ != ncclSuccess)                                                               \
      throw ::sixfold::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": NCCL error " +    \
                             ncclGetErrorString(sixfold_nccl_status_) + " in " #call);                     \
  } while (0)

namespace sixfold {

namespace {

ncclDataType_t nccl_type(ElemType t) {
  switch (t) {
    case ElemType::F32: return ncclFloat32;
    case ElemType::F64: return ncclFloat64;
    case ElemType::I32: return ncclInt32;
    case ElemType::I64: return ncclInt64;
  }
  throw Error("unknown element type for NCCL");
}

// Runs on timeout: aborting the communicator frees the stream stuck in its kernel (NCCL docs,
// "ncclCommAbort").
void abort_comm(void* comm) { ncclCommAbort(static_cast<ncclComm_t>(comm)); }

class NcclPendingAllReduce : public PendingOp {
 public:
  NcclPendingAllReduce(NcclCommunicator& owner, void* host, std::size_t bytes)
      : owner_(owner), host_(host), bytes_(bytes) {
    CHECK_CUDA(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~NcclPendingAllReduce() override {
    if (done_) cudaEventDestroy(done_);
  }
  DeviceStaging& buffer() { return buffer_; }
  cudaEvent_t done() const { return done_; }
  void wait() override {
    if (waited_) return;
    waited_ = true;
    wait_event(done_, owner_.shared().timeout_s, "all_reduce (overlapped)", owner_.name(), abort_comm,
               owner_.handle());
    if (host_) CHECK_CUDA(cudaMemcpy(host_, buffer_.data(), bytes_, cudaMemcpyDeviceToHost));
  }

 private:
  NcclCommunicator& owner_;
  void* host_;
  std::size_t bytes_;
  DeviceStaging buffer_;
  cudaEvent_t done_ = nullptr;
  bool waited_ = false;
};

}  // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, std::string name, std::shared_ptr<NcclShared> shared)
    : comm_(comm), name_(std::move(name)), shared_(std::move(shared)) {
  CHECK_NCCL(ncclCommUserRank(comm_, &rank_));
  CHECK_NCCL(ncclCommCount(comm_, &size_));
}

NcclCommunicator::~NcclCommunicator() {
  shared_->staging_now -= Bytes(staging_.bytes());
  if (comm_) ncclCommDestroy(comm_);
}

void NcclCommunicator::grow_staging(std::size_t bytes) {
  const std::size_t before = staging_.bytes();
  staging_.ensure(bytes);
  shared_->staging_now += Bytes(staging_.bytes() - before);
  shared_->staging_peak = std::max(shared_->staging_peak, shared_->staging_now);
}

std::pair<void*, void*> NcclCommunicator::stage_in(const void* host, std::size_t send_bytes, std::size_t recv_bytes,
                                                   void* recv) {
  CudaStreams& s = *shared_->streams;
  // GPU memory (the runtime's tensors) goes to NCCL as it is; host memory (counts, the loss, the
  // memory report) is staged through the GPU.
  if ((send_bytes == 0 || is_device_memory(host)) && (recv_bytes == 0 || is_device_memory(recv))) {
    s.comm_after_compute();
    return {const_cast<void*>(host), recv};
  }
  const std::size_t recv_offset = (send_bytes + 255) / 256 * 256;
  grow_staging(recv_offset + recv_bytes);
  char* base = static_cast<char*>(staging_.data());
  if (send_bytes > 0) CHECK_CUDA(cudaMemcpyAsync(base, host, send_bytes, cudaMemcpyDefault, s.compute));
  s.comm_after_compute();
  return {base, base + recv_offset};
}

void NcclCommunicator::finish(void* host, const void* device, std::size_t bytes, const char* what) {
  CudaStreams& s = *shared_->streams;
  wait_stream(s.comm, shared_->timeout_s, what, name_, abort_comm, comm_);
  // Every launched send has completed with the stream: their staging can go.
  std::erase_if(shared_->sends, [](const NcclShared::Send& x) { return x.launched; });
  if (bytes > 0 && host != device) CHECK_CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDefault));
}

void NcclCommunicator::launch_pending_sends() {
  bool any = false;
  for (auto& x : shared_->sends) any = any || !x.launched;
  if (!any) return;
  CHECK_NCCL(ncclGroupStart());
  for (auto& x : shared_->sends) {
    if (x.launched) continue;
    CHECK_NCCL(ncclSend(x.data->data(), x.count, x.type, x.peer, x.comm, shared_->streams->comm));
    x.launched = true;
  }
  CHECK_NCCL(ncclGroupEnd());
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key, const std::string& name) {
  launch_pending_sends();
  ncclComm_t child = nullptr;
  CHECK_NCCL(ncclCommSplit(comm_, color, key, &child, nullptr));
  if (!child) throw Error("ncclCommSplit gave no communicator for " + name + " (color " + std::to_string(color) + ")");
  return std::make_unique<NcclCommunicator>(child, name, shared_);
}

void NcclCommunicator::all_reduce(void* buffer, long count, ElemType type, ReduceOp op) {
  launch_pending_sends();
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto [in, out] = stage_in(buffer, bytes, 0, nullptr);
  CHECK_NCCL(ncclAllReduce(in, in, count, nccl_type(type), op == ReduceOp::Max ? ncclMax : ncclSum, comm_,
                           shared_->streams->comm));
  finish(buffer, in, bytes, "all_reduce");
}

std::unique_ptr<PendingOp> NcclCommunicator::start_all_reduce(void* buffer, long count, ElemType type) {
  launch_pending_sends();
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  const bool resident = is_device_memory(buffer);
  auto pending = std::make_unique<NcclPendingAllReduce>(*this, resident ? nullptr : buffer, bytes);
  CudaStreams& s = *shared_->streams;
  void* device = buffer;
  if (!resident) {
    device = pending->buffer().ensure(bytes);
    CHECK_CUDA(cudaMemcpyAsync(device, buffer, bytes, cudaMemcpyHostToDevice, s.compute));
  }
  s.comm_after_compute();
  CHECK_NCCL(ncclAllReduce(device, device, count, nccl_type(type), ncclSum, comm_, s.comm));
  CHECK_CUDA(cudaEventRecord(pending->done(), s.comm));
  return pending;
}

void NcclCommunicator::all_gather(const void* send, void* recv, long count, ElemType type) {
  launch_pending_sends();
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto [in, out] = stage_in(send, bytes, bytes * size_, recv);
  CHECK_NCCL(ncclAllGather(in, out, count, nccl_type(type), comm_, shared_->streams->comm));
  finish(recv, out, bytes * size_, "all_gather");
}

void NcclCommunicator::reduce_scatter(const void* send, void* recv, long count, ElemType type) {
  launch_pending_sends();
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto [in, out] = stage_in(send, bytes * size_, bytes, recv);
  CHECK_NCCL(ncclReduceScatter(in, out, count, nccl_type(type), ncclSum, comm_, shared_->streams->comm));
  finish(recv, out, bytes, "reduce_scatter");
}

void NcclCommunicator::all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                                    ElemType type) {
  launch_pending_sends();
  const long elem = elem_size(type);
  const long send_total = std::accumulate(send_counts, send_counts + size_, 0L);
  const long recv_total = std::accumulate(recv_counts, recv_counts + size_, 0L);
  auto [in, out] = stage_in(send, std::size_t(send_total) * elem, std::size_t(recv_total) * elem, recv);
  const ncclDataType_t t = nccl_type(type);
  cudaStream_t stream = shared_->streams->comm;
  // All-to-all as grouped point-to-point (NCCL docs, "Point-to-point communication: all-to-all").
  CHECK_NCCL(ncclGroupStart());
  long send_offset = 0, recv_offset = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (send_counts[peer] > 0)
      CHECK_NCCL(ncclSend(static_cast<char*>(in) + send_offset * elem, send_counts[peer], t, peer, comm_, stream));
    if (recv_counts[peer] > 0)
      CHECK_NCCL(ncclRecv(static_cast<char*>(out) + recv_offset * elem, recv_counts[peer], t, peer, comm_, stream));
    send_offset += send_counts[peer];
    recv_offset += recv_counts[peer];
  }
  CHECK_NCCL(ncclGroupEnd());
  finish(recv, out, std::size_t(recv_total) * elem, "all_to_all_v");
}

void NcclCommunicator::broadcast(void* buffer, long count, ElemType type, int root) {
  launch_pending_sends();
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto [in, out] = stage_in(buffer, bytes, 0, nullptr);
  CHECK_NCCL(ncclBroadcast(in, in, count, nccl_type(type), root, comm_, shared_->streams->comm));
  finish(buffer, in, bytes, "broadcast");
}

void NcclCommunicator::send(const void* buffer, long count, ElemType type, int peer, int tag) {
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto staged = std::make_shared<DeviceStaging>();
  staged->ensure(std::max<std::size_t>(bytes, 1));
  // A copy: the caller may reuse its buffer at once (MPI_Isend's contract is looser, but nothing
  // is gained by holding it). A device tensor is copied on the compute stream, which the
  // communication stream then waits for.
  if (is_device_memory(buffer)) {
    CudaStreams& s = *shared_->streams;
    CHECK_CUDA(cudaMemcpyAsync(staged->data(), buffer, bytes, cudaMemcpyDeviceToDevice, s.compute));
    s.comm_after_compute();
  } else {
    CHECK_CUDA(cudaMemcpy(staged->data(), buffer, bytes, cudaMemcpyHostToDevice));
  }
  shared_->sends.push_back({comm_, std::move(staged), count, nccl_type(type), peer, false});
}

void NcclCommunicator::recv(void* buffer, long count, ElemType type, int peer, int tag) {
  const std::size_t bytes = std::size_t(count) * elem_size(type);
  auto [in, out] = stage_in(nullptr, 0, bytes, buffer);
  CHECK_NCCL(ncclGroupStart());
  launch_pending_sends();  // nested group: fused with the receive below
  CHECK_NCCL(ncclRecv(out, count, nccl_type(type), peer, comm_, shared_->streams->comm));
  CHECK_NCCL(ncclGroupEnd());
  finish(buffer, out, bytes, ("recv from rank " + std::to_string(peer) + " (tag " + std::to_string(tag) + ")").c_str());
}

void NcclCommunicator::wait_sends() {
  launch_pending_sends();
  finish(nullptr, nullptr, 0, "send");
}

void NcclCommunicator::barrier() {
  int token = 0;
  all_reduce(&token, 1, ElemType::I32, ReduceOp::Sum);
}

std::unique_ptr<Communicator> make_nccl_world(std::unique_ptr<Communicator> host_world,
                                              std::shared_ptr<CudaStreams> streams, double timeout_s) {
  ncclUniqueId id{};
  if (host_world->rank() == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  static_assert(sizeof(ncclUniqueId) % sizeof(int) == 0, "ncclUniqueId is broadcast as ints");
  host_world->broadcast(&id, long(sizeof id / sizeof(int)), ElemType::I32, 0);
  CHECK_CUDA(cudaSetDevice(streams->device));
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, host_world->size(), id, host_world->rank()));
  auto shared = std::make_shared<NcclShared>();
  shared->streams = std::move(streams);
  shared->timeout_s = timeout_s;
  const std::string name = host_world->name();
  shared->host_world = std::move(host_world);
  return std::make_unique<NcclCommunicator>(comm, name, shared);
}

}  // namespace sixfold
