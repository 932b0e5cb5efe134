#pragma once
// Communication within a group of ranks, the collectives and point-to-point of NCCL/MPI that the
// runtime needs. Implementations: MpiCommunicator (mpi_communicator.cpp, OpenMPI) and
// SelfCommunicator (a world of one rank, so a single rank runs without mpirun).
// Every blocking call waits at most timeout_s and then throws sixfold::Error naming the
// operation and the group, instead of hanging.
#include <memory>
#include <string>

namespace sixfold {

class DeviceStorage;

enum class ElemType { F32, F64, I32, I64 };
enum class ReduceOp { Sum, Max };
long elem_size(ElemType t);

template <class T> constexpr ElemType elem_type_of();
template <> constexpr ElemType elem_type_of<float>() { return ElemType::F32; }
template <> constexpr ElemType elem_type_of<double>() { return ElemType::F64; }
template <> constexpr ElemType elem_type_of<int>() { return ElemType::I32; }
template <> constexpr ElemType elem_type_of<long>() { return ElemType::I64; }

// A collective started without waiting (DP gradient overlap); wait() completes it.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Name used in error messages ("tp group of world rank 3").
  virtual const std::string& name() const = 0;
  // Ranks with the same color form a group, ordered by key (MPI_Comm_split semantics).
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& name) = 0;
  // Whether the ranks are processes of their own (false for one emulated rank of a bigger layout,
  // which a GPU backend must not join to an NCCL world).
  virtual bool spans_processes() const { return size() > 1; }
  // Where the tensors handed to this communicator live (the backend says so when it starts); a
  // communicator that moves bytes itself (the emulated one) copies through it. Groups split later
  // inherit it.
  virtual void use_storage(DeviceStorage&) {}

  virtual void all_reduce(void* buffer, long count, ElemType type, ReduceOp op) = 0;
  virtual std::unique_ptr<PendingOp> start_all_reduce(void* buffer, long count, ElemType type) = 0;
  // recv holds size() * count elements in rank order.
  virtual void all_gather(const void* send, void* recv, long count, ElemType type) = 0;
  // send holds size() * count elements; rank r receives the sum of block r.
  virtual void reduce_scatter(const void* send, void* recv, long count, ElemType type) = 0;
  // Block i of send (send_counts[i] elements) goes to rank i; recv gets recv_counts[i] from rank i.
  virtual void all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                            ElemType type) = 0;
  virtual void broadcast(void* buffer, long count, ElemType type, int root) = 0;
  // send does not wait for the receiver (the buffer must live until wait_sends()); recv waits.
  virtual void send(const void* buffer, long count, ElemType type, int peer, int tag) = 0;
  virtual void recv(void* buffer, long count, ElemType type, int peer, int tag) = 0;
  virtual void wait_sends() = 0;
  virtual void barrier() = 0;

  // Typed conveniences.
  template <class T> void all_reduce_sum(T* b, long n) { all_reduce(b, n, elem_type_of<T>(), ReduceOp::Sum); }
  template <class T> void all_reduce_max(T* b, long n) { all_reduce(b, n, elem_type_of<T>(), ReduceOp::Max); }
};

// The world of this process: MPI when the process was started by mpirun (and MPI was built),
// else a world of one. timeout_s bounds every blocking communication.
std::unique_ptr<Communicator> make_world_communicator(double timeout_s);

// True when the environment says an MPI launcher started this process with more than one rank.
int launched_world_size();

// After a fatal error on one rank of a launch of several (a communication timeout, any error the
// CLI catches): ends every rank of the job with `code` (MPI_Abort), so that no peer waits forever
// in a collective or in MPI_Finalize. Does nothing in a world of one or before MPI started.
void abort_distributed_run(int code);

}  // namespace sixfold
