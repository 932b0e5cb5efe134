#pragma once
// Parameters of one rank, in flat groups (one per transformer layer, one for a layer's local
// experts, embedding, final norm, LM head), FSDP-style: a group is the unit that ZeRO shards,
// gathers and reduces. Weights, gradients and AdamW moments live in TrackedBuffers so that the
// bytes per category are exact (see README-memory.md):
//   zero 0: weights, grads, m, v all full (the TP/EP shard of this rank)
//   zero 1: m, v sharded over the group's data-parallel ranks
//   zero 2: + gradients sharded (a full gradient exists only while a layer's backward runs)
//   zero 3: + weights sharded (gathered for each use, freed after)
// With zero >= 1 a group's flat length is padded to a multiple of the shard count.
#include <optional>
#include <string>
#include <vector>

#include "executor/backend/backend.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/runtime/memory_tracker.hpp"

namespace sixfold {

struct TensorSlot {
  std::string name;
  long offset = 0;
  long numel = 0;
  bool tp_partial_grad = false;  // gradient summed over TP ranks (its input is sequence-sharded)
};

template <class T>
class ParamGroup {
 public:
  // expert: a layer's local experts, sharded and reduced over the expert-data group.
  // Its tensors live in the backend's memory and are updated by its kernels.
  ParamGroup(std::string name, int zero, Communicator* shard_group, Backend& backend, bool expert = false)
      : name_(std::move(name)), zero_(zero), shard_group_(shard_group), backend_(&backend), memory_(&backend.memory()),
        ops_(&backend.ops<T>()), expert_(expert) {}

  // Hybrid sharding (Layout::dp_shard): the shard group holds one replica of the sharded states;
  // each reduced gradient shard is then summed over `replicas` (one rank of each replica), timed
  // as the op `op_id` (the program's grad_replica_reduce; may be null).
  void replicate_over(Communicator* replicas, const char* op_id) {
    replicas_ = replicas;
    replica_op_id_ = op_id;
  }

  // Adds a tensor with its initial local values (the TP/EP slice of this rank). Returns its index.
  int add(const std::string& name, const std::vector<double>& init, bool tp_partial_grad);
  // Allocates the buffers once every tensor is added.
  void finalize();

  const std::string& name() const { return name_; }
  bool expert() const { return expert_; }
  const std::vector<TensorSlot>& tensors() const { return tensors_; }
  long numel() const { return numel_; }
  long padded() const { return padded_; }
  long shard_size() const { return padded_ / shard_group_->size(); }
  Communicator& shard_group() { return *shard_group_; }
  bool has_tp_partial() const;

  // Full weights of this rank's tensor (in the backend's memory); under zero 3 only between
  // acquire and release.
  const T* weight(int tensor) const;
  T* mutable_weight(int tensor);
  // Full gradient of a tensor to accumulate into; under zero >= 2 only between acquire and release.
  T* grad(int tensor);

  // zero 3: all-gathers the weights (once for nested users). With `copy_out_op` (FSDP2's way, the
  // program's zero3_gather_copy_out), into a staging buffer first and then copied into the
  // gathered weights, timed as that op; without it, straight into them (FSDP1's flat buffer).
  void acquire_weights(const char* copy_out_op = nullptr);
  void release_weights();
  void acquire_grads();
  // zero >= 2: sums the TP-partial tensors over tp (when given), reduce-scatters over the shard
  // group into the persistent gradient shard and frees the full gradient.
  void release_grads(Communicator* tp);

  // zero < 2, after the last micro-batch: TP-partial sums (tp may be null), then the data-parallel
  // sum, blocking or started (finish with wait_reduction()).
  void reduce_tp_partials(Communicator& tp);
  void reduce_gradients_blocking();
  void start_gradient_reduction();
  void wait_reduction();
  // Sums the gradient (or its shard) over another group (tied embedding copies).
  void all_reduce_grads_over(Communicator& group);

  // AdamW on this rank's part; then, under zero 1 and 2, gather_updated_weights (all-gather).
  void optimizer_step(double lr, double beta1, double beta2, double eps, double weight_decay, long step);
  void gather_updated_weights();
  void zero_grads();
  // Sum of squares of the weights held (a checksum for tests).
  double weight_checksum();

 private:
  long shard_offset() const { return shard_size() * shard_group_->rank(); }
  // The replicas' sum of a gradient shard (no-op without hybrid sharding).
  void reduce_over_replicas(T* shard, long n);
  void reduce_own_shard_over_replicas();
  std::string name_;
  int zero_;
  Communicator* shard_group_;
  Communicator* replicas_ = nullptr;
  const char* replica_op_id_ = nullptr;
  Backend* backend_;
  MemoryTracker* memory_;
  DeviceOps<T>* ops_;
  bool expert_ = false;
  std::vector<TensorSlot> tensors_;
  std::vector<double> init_;  // released after finalize
  long numel_ = 0, padded_ = 0;
  TrackedBuffer<T> weights_, grads_, adam_m_, adam_v_, gathered_, full_grad_;
  int weight_users_ = 0, grad_users_ = 0;
  std::unique_ptr<PendingOp> pending_;
};

}  // namespace sixfold
