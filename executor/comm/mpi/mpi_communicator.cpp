// Collectives and point-to-point over MPI. Every operation is started non-blocking and then
// polled against a deadline (MPI has no timeout of its own), so a rank whose peer never arrives
// reports which operation on which group timed out instead of hanging.
#include "executor/comm/mpi/mpi_communicator.hpp"

// The C++ bindings of OpenMPI are deprecated and noisy; the C API is all we use.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "common/error.hpp"

namespace sixfold {

namespace {

MPI_Datatype mpi_type(ElemType t) {
  switch (t) {
    case ElemType::F32: return MPI_FLOAT;
    case ElemType::F64: return MPI_DOUBLE;
    case ElemType::I32: return MPI_INT;
    case ElemType::I64: return MPI_LONG;
  }
  return MPI_BYTE;
}

void check_mpi(int rc, const char* what, const std::string& group) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string("MPI ") + what + " on " + group + " failed: " + std::string(msg, len));
}

// Polls until the requests complete or the deadline passes; yields the core between polls so
// that oversubscribed ranks (more ranks than cores) make progress.
void wait_all(std::vector<MPI_Request>& requests, double timeout_s, const char* what, const std::string& group) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  long polls = 0;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), what, group);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(std::string("communication timed out: ") + what + " on " + group + " did not complete within " +
                  std::to_string(timeout_s) + " s (a peer rank is missing, failed or runs a different program)");
    if (++polls > 64) std::this_thread::yield();
  }
}

class MpiPendingOp : public PendingOp {
 public:
  MpiPendingOp(MPI_Request r, double timeout_s, std::string group)
      : requests_{r}, timeout_s_(timeout_s), group_(std::move(group)) {}
  void wait() override { wait_all(requests_, timeout_s_, "all-reduce (overlapped)", group_); }

 private:
  std::vector<MPI_Request> requests_;
  double timeout_s_;
  std::string group_;
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned, double timeout_s, std::string name)
      : comm_(comm), owned_(owned), timeout_s_(timeout_s), name_(std::move(name)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }

  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override {
    MPI_Comm sub;
    check_mpi(MPI_Comm_split(comm_, color, key, &sub), "comm split", name_);
    return std::make_unique<MpiCommunicator>(sub, true, timeout_s_, name);
  }

  void all_reduce(void* buffer, long count, ElemType type, ReduceOp op) override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer, int(count), mpi_type(type), op == ReduceOp::Sum ? MPI_SUM : MPI_MAX,
                             comm_, &r[0]),
              "all-reduce", name_);
    wait_all(r, timeout_s_, "all-reduce", name_);
  }
  std::unique_ptr<PendingOp> start_all_reduce(void* buffer, long count, ElemType type) override {
    MPI_Request r;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buffer, int(count), mpi_type(type), MPI_SUM, comm_, &r), "all-reduce",
              name_);
    return std::make_unique<MpiPendingOp>(r, timeout_s_, name_);
  }
  void all_gather(const void* send, void* recv, long count, ElemType type) override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Iallgather(send, int(count), mpi_type(type), recv, int(count), mpi_type(type), comm_, &r[0]),
              "all-gather", name_);
    wait_all(r, timeout_s_, "all-gather", name_);
  }
  void reduce_scatter(const void* send, void* recv, long count, ElemType type) override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Ireduce_scatter_block(send, recv, int(count), mpi_type(type), MPI_SUM, comm_, &r[0]),
              "reduce-scatter", name_);
    wait_all(r, timeout_s_, "reduce-scatter", name_);
  }
  void all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                    ElemType type) override {
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    int so = 0, ro = 0;
    for (int i = 0; i < size_; ++i) {
      sc[i] = int(send_counts[i]);
      rc[i] = int(recv_counts[i]);
      sd[i] = so;
      rd[i] = ro;
      so += sc[i];
      ro += rc[i];
    }
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Ialltoallv(send, sc.data(), sd.data(), mpi_type(type), recv, rc.data(), rd.data(), mpi_type(type),
                             comm_, &r[0]),
              "all-to-all", name_);
    wait_all(r, timeout_s_, "all-to-all", name_);
  }
  void broadcast(void* buffer, long count, ElemType type, int root) override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Ibcast(buffer, int(count), mpi_type(type), root, comm_, &r[0]), "broadcast", name_);
    wait_all(r, timeout_s_, "broadcast", name_);
  }
  void send(const void* buffer, long count, ElemType type, int peer, int tag) override {
    MPI_Request r;
    check_mpi(MPI_Isend(buffer, int(count), mpi_type(type), peer, tag, comm_, &r), "send", name_);
    pending_sends_.push_back(r);
  }
  void recv(void* buffer, long count, ElemType type, int peer, int tag) override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Irecv(buffer, int(count), mpi_type(type), peer, tag, comm_, &r[0]), "recv", name_);
    wait_all(r, timeout_s_, "receive", name_ + " from rank " + std::to_string(peer));
  }
  void wait_sends() override {
    wait_all(pending_sends_, timeout_s_, "send", name_);
    pending_sends_.clear();
  }
  void barrier() override {
    std::vector<MPI_Request> r(1);
    check_mpi(MPI_Ibarrier(comm_, &r[0]), "barrier", name_);
    wait_all(r, timeout_s_, "barrier", name_);
  }

 private:
  MPI_Comm comm_;
  bool owned_;
  double timeout_s_;
  std::string name_;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_sends_;
};

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

void abort_mpi_world(int code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

std::unique_ptr<Communicator> make_mpi_world_communicator(double timeout_s) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    std::atexit(finalize_mpi);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false, timeout_s, "world");
}

}  // namespace sixfold
