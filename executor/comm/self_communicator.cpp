#include "executor/comm/self_communicator.hpp"

#include <cstdlib>
#include <cstring>

#include "common/error.hpp"

namespace sixfold {

long elem_size(ElemType t) {
  switch (t) {
    case ElemType::F32: return 4;
    case ElemType::F64: return 8;
    case ElemType::I32: return 4;
    case ElemType::I64: return 8;
  }
  return 0;
}

namespace {
class DonePendingOp : public PendingOp {
 public:
  void wait() override {}
};
}  // namespace

std::unique_ptr<Communicator> SelfCommunicator::split(int, int, const std::string& name) {
  return std::make_unique<SelfCommunicator>(name);
}

std::unique_ptr<PendingOp> SelfCommunicator::start_all_reduce(void*, long, ElemType) {
  return std::make_unique<DonePendingOp>();
}

void SelfCommunicator::all_gather(const void* send, void* recv, long count, ElemType type) {
  if (send != recv) std::memmove(recv, send, count * elem_size(type));
}

void SelfCommunicator::reduce_scatter(const void* send, void* recv, long count, ElemType type) {
  if (send != recv) std::memmove(recv, send, count * elem_size(type));
}

void SelfCommunicator::all_to_all_v(const void* send, const long* send_counts, void* recv, const long* recv_counts,
                                    ElemType type) {
  if (send_counts[0] != recv_counts[0])
    throw Error("all_to_all_v on " + name_ + ": a rank sends itself " + std::to_string(send_counts[0]) +
                " elements but expects " + std::to_string(recv_counts[0]));
  std::memmove(recv, send, send_counts[0] * elem_size(type));
}

void SelfCommunicator::send(const void* buffer, long count, ElemType type, int peer, int tag) {
  const char* p = static_cast<const char*>(buffer);
  queued_.emplace_back(tag, std::vector<char>(p, p + count * elem_size(type)));
}

void SelfCommunicator::recv(void* buffer, long count, ElemType type, int peer, int tag) {
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->first != tag) continue;
    if (long(it->second.size()) != count * elem_size(type))
      throw Error("recv on " + name_ + ": message of tag " + std::to_string(tag) + " has the wrong size");
    std::memcpy(buffer, it->second.data(), it->second.size());
    queued_.erase(it);
    return;
  }
  throw Error("recv on " + name_ + ": no message with tag " + std::to_string(tag) +
              " was sent (a world of one rank would wait forever)");
}

int launched_world_size() {
  // OpenMPI, MPICH/Hydra and Slurm name the world size differently.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 1;
}

}  // namespace sixfold
