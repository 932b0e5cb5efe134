#pragma once
// The model of one rank and one training step of it: the pipeline chunks it holds (layers, plus
// the vocab-parallel embedding on the first stage and final norm, LM head and vocab-parallel
// cross-entropy on the last), driven through the pipeline schedule, with the data-parallel
// gradient reduction (ZeRO 0-3, overlap none / per-layer / bucketed), tied-embedding gradient sum
// over the first and last stage, and AdamW.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/runtime/exec_context.hpp"
#include "executor/runtime/param_store.hpp"
#include "executor/runtime/transformer_layer.hpp"

namespace sixfold {

struct TrainingHyperparameters {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.01;  // GPT-3 paper's betas
};

template <class T>
class ModelRuntime {
 public:
  // Every rank of the world constructs it with the same arguments (it splits nothing itself).
  // program: the rank's step program (rank_program), shared with the caller that reports on it;
  // null: the runtime expands its own.
  ModelRuntime(const ModelSpec& model, const Layout& layout, const Workload& work, ProcessGroups& groups,
               Backend& backend, std::uint64_t seed, TrainingHyperparameters hp,
               std::shared_ptr<const RankProgram> program = nullptr);
  ~ModelRuntime();
  // One optimizer step over global_batch sequences; returns the global mean loss (same on every rank).
  double train_step(long step);
  // Forward and backward of one step with the gradients reduced, no optimizer update; returns the
  // global mean loss (gradient checks use it).
  double forward_backward(long step);
  // Sum over every parameter group of this rank of the squared weights.
  double weight_checksum();
  std::vector<ParamGroup<T>*> param_groups();

 private:
  struct Chunk;
  struct MicroBatchState;
  void forward(int chunk, int micro_batch, long step);
  void backward(int chunk, int micro_batch);
  void embedding_forward(MicroBatchState& mb, T* out);
  void embedding_backward(MicroBatchState& mb, const T* dout);
  double head_forward(MicroBatchState& mb, const T* x);
  void head_backward(MicroBatchState& mb, T* dx);
  void grads_ready(ParamGroup<T>* group);
  void finish_gradients();
  int tag(int micro_batch, int virtual_stage, bool forward) const;

  const ModelSpec& model_;
  Layout layout_;
  Workload work_;
  std::shared_ptr<const RankProgram> program_;  // the step program's ops of this rank's stage (ctx_.program)
  ExecContext ctx_;
  std::uint64_t seed_;
  TrainingHyperparameters hp_;
  int micro_batches_ = 1;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::unique_ptr<ParamGroup<T>> embedding_, final_norm_, head_;
  int embedding_w_ = -1, final_norm_w_ = -1, final_norm_b_ = -1, head_w_ = -1;
  std::map<std::pair<int, int>, std::unique_ptr<MicroBatchState>> in_flight_;  // (chunk, micro-batch)
  std::vector<std::unique_ptr<TrackedBuffer<T>>> pending_sends_;
  std::vector<ParamGroup<T>*> ready_, bucket_;
  double bucket_bytes_ = 0;
  double loss_sum_ = 0;
  long current_step_ = 0;
};

}  // namespace sixfold
