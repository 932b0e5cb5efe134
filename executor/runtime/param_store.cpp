#include "executor/runtime/param_store.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace sixfold {

template <class T>
int ParamGroup<T>::add(const std::string& name, const std::vector<double>& init, bool tp_partial_grad) {
  tensors_.push_back({name, numel_, long(init.size()), tp_partial_grad});
  init_.insert(init_.end(), init.begin(), init.end());
  numel_ += long(init.size());
  return int(tensors_.size()) - 1;
}

template <class T>
bool ParamGroup<T>::has_tp_partial() const {
  return std::any_of(tensors_.begin(), tensors_.end(), [](const TensorSlot& t) { return t.tp_partial_grad; });
}

template <class T>
void ParamGroup<T>::finalize() {
  const long n = shard_group_->size();
  padded_ = zero_ >= 1 ? (numel_ + n - 1) / n * n : numel_;
  std::vector<double> values = std::move(init_);
  values.resize(padded_, 0.0);
  const long shard = shard_size(), off = shard_offset();
  const long first = zero_ >= 3 ? off : 0, held = zero_ >= 3 ? shard : padded_;
  const std::vector<T> mine(values.begin() + first, values.begin() + first + held);
  weights_.reset(memory_, MemoryCategory::Weights, held);
  weights_.upload(mine.data(), held);
  grads_.reset(memory_, MemoryCategory::Gradients, zero_ >= 2 ? shard : padded_);
  adam_m_.reset(memory_, MemoryCategory::Optimizer, zero_ >= 1 ? shard : padded_);
  adam_v_.reset(memory_, MemoryCategory::Optimizer, zero_ >= 1 ? shard : padded_);
}

template <class T>
const T* ParamGroup<T>::weight(int tensor) const {
  if (zero_ >= 3) {
    if (weight_users_ == 0) throw Error("param group " + name_ + ": weights used while not gathered (ZeRO-3)");
    return gathered_.data() + tensors_[tensor].offset;
  }
  return weights_.data() + tensors_[tensor].offset;
}

template <class T>
T* ParamGroup<T>::mutable_weight(int tensor) {
  return const_cast<T*>(weight(tensor));
}

template <class T>
T* ParamGroup<T>::grad(int tensor) {
  if (zero_ >= 2) {
    if (grad_users_ == 0) throw Error("param group " + name_ + ": gradient used outside acquire/release (ZeRO-2/3)");
    return full_grad_.data() + tensors_[tensor].offset;
  }
  return grads_.data() + tensors_[tensor].offset;
}

template <class T>
void ParamGroup<T>::acquire_weights(const char* copy_out_op) {
  if (zero_ < 3 || weight_users_++ > 0) return;
  gathered_.reset(memory_, MemoryCategory::Buffers, padded_);
  if (!copy_out_op) {
    shard_group_->all_gather(weights_.data(), gathered_.data(), shard_size(), elem_type_of<T>());
    return;
  }
  // The all-gather's own output buffer, then the copy out of it. Outside the memory tracker, as the
  // cost model counts no memory for it (a transient of one group that the allocator reuses).
  const std::size_t bytes = std::size_t(padded_) * sizeof(T);
  DeviceStorage& storage = backend_->storage();
  void* staging = storage.allocate(bytes);
  try {
    shard_group_->all_gather(weights_.data(), static_cast<T*>(staging), shard_size(), elem_type_of<T>());
    ScopedOpTimer timer(*backend_, copy_out_op);
    storage.copy(gathered_.data(), staging, bytes);
  } catch (...) {
    storage.release(staging, bytes);
    throw;
  }
  storage.release(staging, bytes);
}

template <class T>
void ParamGroup<T>::release_weights() {
  if (zero_ < 3) return;
  if (--weight_users_ == 0) gathered_.free();
}

template <class T>
void ParamGroup<T>::acquire_grads() {
  if (zero_ < 2 || grad_users_++ > 0) return;
  full_grad_.reset(memory_, MemoryCategory::Buffers, padded_);
}

template <class T>
void ParamGroup<T>::release_grads(Communicator* tp) {
  if (zero_ < 2) return;
  if (--grad_users_ > 0) return;
  if (tp && tp->size() > 1)
    for (const auto& t : tensors_)
      if (t.tp_partial_grad) tp->all_reduce_sum(full_grad_.data() + t.offset, t.numel);
  TrackedBuffer<T> shard(memory_, MemoryCategory::Buffers, shard_size());
  shard_group_->reduce_scatter(full_grad_.data(), shard.data(), shard_size(), elem_type_of<T>());
  reduce_over_replicas(shard.data(), shard_size());
  ops_->add(grads_.data(), shard.data(), shard_size());
  full_grad_.free();
}

template <class T>
void ParamGroup<T>::reduce_tp_partials(Communicator& tp) {
  if (zero_ >= 2 || tp.size() == 1) return;
  for (const auto& t : tensors_)
    if (t.tp_partial_grad) tp.all_reduce_sum(grads_.data() + t.offset, t.numel);
}

template <class T>
void ParamGroup<T>::reduce_over_replicas(T* shard, long n) {
  if (!replicas_ || replicas_->size() == 1) return;
  std::optional<ScopedOpTimer> timer;
  if (replica_op_id_) timer.emplace(*backend_, replica_op_id_);
  replicas_->all_reduce_sum(shard, n);
}

template <class T>
void ParamGroup<T>::reduce_gradients_blocking() {
  if (zero_ >= 2) return;
  if (shard_group_->size() > 1) shard_group_->all_reduce_sum(grads_.data(), grads_.size());
  reduce_own_shard_over_replicas();
}

template <class T>
void ParamGroup<T>::start_gradient_reduction() {
  if (zero_ >= 2 || shard_group_->size() == 1) return;
  pending_ = shard_group_->start_all_reduce(grads_.data(), grads_.size(), elem_type_of<T>());
}

template <class T>
void ParamGroup<T>::wait_reduction() {
  if (pending_) pending_->wait();
  pending_.reset();
  reduce_own_shard_over_replicas();
}

template <class T>
void ParamGroup<T>::reduce_own_shard_over_replicas() {
  // Zero 1: the optimizer reads only this rank's shard of the full gradient, which the replicas sum.
  if (zero_ == 1) reduce_over_replicas(grads_.data() + shard_offset(), shard_size());
}

template <class T>
void ParamGroup<T>::all_reduce_grads_over(Communicator& group) {
  if (group.size() > 1) group.all_reduce_sum(grads_.data(), grads_.size());
}

template <class T>
void ParamGroup<T>::optimizer_step(double lr, double beta1, double beta2, double eps, double weight_decay, long step) {
  if (zero_ == 0) {
    ops_->adamw(weights_.data(), grads_.data(), adam_m_.data(), adam_v_.data(), padded_, lr, beta1, beta2, eps,
              weight_decay, step);
    return;
  }
  const long shard = shard_size(), off = shard_offset();
  T* w = zero_ >= 3 ? weights_.data() : weights_.data() + off;
  const T* g = zero_ >= 2 ? grads_.data() : grads_.data() + off;
  ops_->adamw(w, g, adam_m_.data(), adam_v_.data(), shard, lr, beta1, beta2, eps, weight_decay, step);
}

template <class T>
void ParamGroup<T>::gather_updated_weights() {
  if (zero_ == 0 || zero_ >= 3) return;
  const long shard = shard_size();
  TrackedBuffer<T> mine(memory_, MemoryCategory::Buffers, shard);
  memory_->storage().copy(mine.data(), weights_.data() + shard_offset(), std::size_t(shard) * sizeof(T));
  shard_group_->all_gather(mine.data(), weights_.data(), shard, elem_type_of<T>());
}

template <class T>
void ParamGroup<T>::zero_grads() {
  grads_.zero();
}

template <class T>
double ParamGroup<T>::weight_checksum() {
  return ops_->sum_squares(weights_.data(), weights_.size());
}

template class ParamGroup<float>;
template class ParamGroup<double>;

}  // namespace sixfold
