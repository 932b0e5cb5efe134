#include "executor/runtime/model_runtime.hpp"

#include <cmath>

#include "common/error.hpp"
#include "executor/runtime/param_init.hpp"
#include "executor/runtime/synthetic_data.hpp"
#include "models/pipeline_schedule.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

template <class T>
struct ModelRuntime<T>::Chunk {
  int virtual_stage = 0;
  bool first = false, last = false;  // holds the embedding / the head
  std::vector<std::unique_ptr<TransformerLayer<T>>> layers;
};

template <class T>
struct ModelRuntime<T>::MicroBatchState {
  std::vector<int> tokens, targets;  // [rows]
  std::vector<LayerSaved<T>> layers;
  // Last stage: final-norm input and statistics, its output (the sequence shard under SP,
  // re-gathered in backward) and the fp32 softmax of the vocab-parallel cross-entropy, which is
  // what Megatron's VocabParallelCrossEntropy saves (the logits themselves are dropped).
  TrackedBuffer<T> head_in, norm_mean, norm_rstd, head_normed, softmax;
  TrackedBuffer<T> head_full;  // the gathered head input, where SP keeps it (ExecContext::sp_keeps_gathered)
};

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw UsageError("the executor cannot run this: " + what);
}
}  // namespace

template <class T>
ModelRuntime<T>::ModelRuntime(const ModelSpec& model, const Layout& layout, const Workload& work,
                              ProcessGroups& groups, Backend& backend, std::uint64_t seed, TrainingHyperparameters hp,
                              std::shared_ptr<const RankProgram> program)
    : model_(model), layout_(layout), work_(work), program_(std::move(program)), seed_(seed), hp_(hp) {
  validate_layout(model, layout, work, groups.world->size());
  require(!model.mla.enabled, "MLA attention is not implemented in the executor");
  require(!model.qkv_bias && !model.linear_bias, "linear biases are not implemented in the executor");
  require(!model.qk_norm && !model.learned_positions && !model.parallel_residual,
          "qk-norm, learned positions and parallel residual are not implemented in the executor");
  require(model.moe.shared_experts == 0 && model.moe.capacity_factor == 0 && !model.moe.router_bias,
          "shared experts, expert capacity and router bias are not implemented in the executor");
  require(!splits_weight_grad(layout.schedule),
          "the executor runs the gpipe, 1f1b and interleaved schedules, not " + to_string(layout.schedule) +
              " (its deferred weight-gradient passes)");
  require(model.kv_heads % layout.tp == 0, "tp must divide kv_heads (" + std::to_string(model.kv_heads) + ")");
  require(model.vocab % layout.tp == 0, "tp must divide the vocabulary (" + std::to_string(model.vocab) + ")");
  require(model.ffn % layout.tp == 0 || model.moe.enabled(), "tp must divide ffn");
  require(layout.etp == 1, "expert tensor parallelism (etp > 1) is not implemented in the executor");
  // The EP peers include TP peers (the experts' mesh): each must route tokens of its own.
  require(!model.moe.enabled() || layout.tp == 1 || layout.sp,
          "MoE with tensor parallelism needs sequence parallelism (--sp), as Megatron-Core requires");
  require(model.rotary_fraction > 0, "absolute positions (rotary_fraction 0) are not implemented in the executor");
  require(work.mtp_layers == 0, "multi-token prediction (--mtp-num-layers) is not implemented in the executor");
  require(!work.fp8_activation_input_store, "the fp8 SwiGLU input store is not implemented in the executor");
  require(!work.grad_reduce_in_bf16, "gradients reduced in bf16 (--grad-reduce-in-bf16) are not implemented in the executor");
  require(!work.compile, "torch.compile (--compile) is not reproduced by the executor: its kernels save what eager code saves");

  require(!model.dropout, "dropout is not implemented in the executor");
  require(work.train_metric_passes == 0, "training-metric passes (workload.train_metric_passes) are not run by the executor");
  if (!program_) program_ = std::make_shared<const RankProgram>(rank_program(model, layout, work, groups.me.pp));
  ctx_.program = program_.get();
  ctx_.dp = dp_handles(*program_, backend);
  ctx_.model = &model_;
  ctx_.layout = &layout_;
  ctx_.groups = &groups;
  ctx_.backend = &backend;
  ctx_.hidden = model.hidden;
  ctx_.micro_batch = int(layout.micro_batch);
  ctx_.seq = int(work.seq);
  ctx_.seq_local = int(work.seq / layout.cp);
  ctx_.rows = long(ctx_.micro_batch) * ctx_.seq_local;
  ctx_.sp = layout.sp && layout.tp > 1;
  ctx_.sp_keeps_gathered = ctx_.sp && framework_traits(work.framework).sp_keeps_gathered_input;
  require(!ctx_.sp || ctx_.rows % layout.tp == 0, "tp must divide the tokens of a micro-batch under sp");
  ctx_.rows_residual = ctx_.sp ? ctx_.rows / layout.tp : ctx_.rows;
  ctx_.head_dim = model.head_dim > 0 ? model.head_dim : int(model.hidden / model.heads);
  ctx_.heads_local = model.heads / layout.tp;
  ctx_.kv_heads_local = model.kv_heads / layout.tp;
  ctx_.rotary_dim = int(std::lround(ctx_.head_dim * model.rotary_fraction)) / 2 * 2;
  ctx_.ffn_local = model.ffn / layout.tp;
  ctx_.vocab_local = model.vocab / layout.tp;
  ctx_.vocab_start = ctx_.vocab_local * groups.me.tp;
  const std::vector<int> mine = ctx_.cp_positions(groups.me.cp);
  for (int b = 0; b < ctx_.micro_batch; ++b) ctx_.positions.insert(ctx_.positions.end(), mine.begin(), mine.end());
  micro_batches_ = int(micro_batches_per_step(layout, work));

  // Layers of each virtual stage (v * pp + s), in model order.
  const int pp = layout.pp, vpp = layout.virtual_stages(), stage = groups.me.pp;
  const std::vector<int> per_virtual_stage = virtual_stage_layer_counts(model, layout);
  int first_layer = 0;
  for (int v = 0; v < vpp; ++v) {
    for (int s = 0; s < pp; ++s) {
      const int count = per_virtual_stage[v * pp + s];
      if (s == stage) {
        auto chunk = std::make_unique<Chunk>();
        chunk->virtual_stage = v * pp + s;
        chunk->first = chunk->virtual_stage == 0;
        chunk->last = chunk->virtual_stage == pp * vpp - 1;
        // Partial recompute: the layers keeps_activations marks keep their activations (as
        // expand_step_program counts them).
        for (int l = first_layer; l < first_layer + count; ++l)
          chunk->layers.push_back(std::make_unique<TransformerLayer<T>>(
              ctx_, l, seed, keeps_activations(per_virtual_stage, layout, v * pp + s, l - first_layer)));
        chunks_.push_back(std::move(chunk));
      }
      first_layer += count;
    }
  }
  const long H = model.hidden, Vl = ctx_.vocab_local;
  auto vocab_rows = [&](const std::string& name) {
    return normal_block(name, seed, H, ctx_.vocab_start, ctx_.vocab_start + Vl, 0, H, 0.02);
  };
  const bool has_first = chunks_.front()->first, has_last = chunks_.back()->last;
  if (has_first) {
    embedding_ = std::make_unique<ParamGroup<T>>("embedding", layout.zero, groups.dp_shard.get(), backend);
    embedding_->replicate_over(groups.dp_replica.get(), ctx_.dp.grad_replica_reduce.id);
    embedding_w_ = embedding_->add("embedding.weight", vocab_rows("embedding.weight"), false);
    embedding_->finalize();
  }
  if (has_last) {
    final_norm_ = std::make_unique<ParamGroup<T>>("final_norm", layout.zero, groups.dp_shard.get(), backend);
    final_norm_->replicate_over(groups.dp_replica.get(), ctx_.dp.grad_replica_reduce.id);
    final_norm_w_ = final_norm_->add("final_norm.weight", std::vector<double>(H, 1.0), ctx_.sp);
    if (model.norm == NormKind::LayerNorm) final_norm_b_ = final_norm_->add("final_norm.bias", std::vector<double>(H, 0.0), ctx_.sp);
    final_norm_->finalize();
    if (!(model.tied_embeddings && has_first)) {
      // Tied embeddings on another stage: an identical copy whose gradient is summed with the
      // first stage's (Megatron's embedding group).
      head_ = std::make_unique<ParamGroup<T>>("lm_head", layout.zero, groups.dp_shard.get(), backend);
      head_->replicate_over(groups.dp_replica.get(), ctx_.dp.grad_replica_reduce.id);
      const std::string name = model.tied_embeddings ? "embedding.weight" : "lm_head.weight";
      head_w_ = head_->add(name, vocab_rows(name), false);
      head_->finalize();
    }
  }
}

template <class T>
ModelRuntime<T>::~ModelRuntime() = default;

template <class T>
std::vector<ParamGroup<T>*> ModelRuntime<T>::param_groups() {
  std::vector<ParamGroup<T>*> all;
  if (embedding_) all.push_back(embedding_.get());
  for (auto& c : chunks_)
    for (auto& l : c->layers) {
      all.push_back(&l->params());
      if (l->expert_params()) all.push_back(l->expert_params());
    }
  if (final_norm_) all.push_back(final_norm_.get());
  if (head_) all.push_back(head_.get());
  return all;
}

template <class T>
double ModelRuntime<T>::weight_checksum() {
  double s = 0;
  for (auto* g : param_groups()) s += g->weight_checksum();
  return s;
}

template <class T>
int ModelRuntime<T>::tag(int micro_batch, int virtual_stage, bool forward) const {
  return (micro_batch * layout_.pp * layout_.virtual_stages() + virtual_stage) * 2 + (forward ? 0 : 1);
}

template <class T>
double ModelRuntime<T>::train_step(long step) {
  const double loss = forward_backward(step);
  {
    OpScope timer(ctx_.dp.optimizer);
    for (auto* g : param_groups()) g->optimizer_step(hp_.lr, hp_.beta1, hp_.beta2, hp_.eps, hp_.weight_decay, step + 1);
  }
  for (auto* g : param_groups()) {
    OpScope timer(ctx_.dp.gather_after_step(g->expert()));
    g->gather_updated_weights();
  }
  return loss;
}

template <class T>
double ModelRuntime<T>::forward_backward(long step) {
  current_step_ = step;
  loss_sum_ = 0;
  for (auto* g : param_groups()) g->zero_grads();
  ready_.clear();
  bucket_.clear();
  bucket_bytes_ = 0;
  // The schedule's own order (models/pipeline_schedule.hpp), the one the simulator plays.
  for (const ScheduledBlock& b : stage_order(layout_.schedule, layout_.pp, layout_.virtual_stages(), micro_batches_,
                                             ctx_.groups->me.pp)) {
    if (b.phase == Phase::Forward) forward(b.chunk, int(b.micro_batch), step);
    else backward(b.chunk, int(b.micro_batch));
  }
  ctx_.groups->pp->wait_sends();
  pending_sends_.clear();
  finish_gradients();
  double loss = loss_sum_;
  ctx_.groups->world->all_reduce_sum(&loss, 1);
  return loss / (double(work_.global_batch) * double(work_.seq));
}

template <class T>
void ModelRuntime<T>::forward(int chunk_index, int m, long step) {
  Chunk& chunk = *chunks_[chunk_index];
  auto mb = std::make_unique<MicroBatchState>();
  const auto& me = ctx_.groups->me;
  const std::vector<int> mine = ctx_.cp_positions(me.cp);
  for (int b = 0; b < ctx_.micro_batch; ++b) {
    const long sequence = step * work_.global_batch + (long(m) * layout_.dp + me.dp) * layout_.micro_batch + b;
    const auto tokens = synthetic_sequence(seed_, step, sequence, ctx_.seq, int(model_.vocab));
    for (int p : mine) {
      mb->tokens.push_back(tokens[p]);
      mb->targets.push_back(tokens[p + 1]);
    }
  }
  const long width = ctx_.rows_residual * ctx_.hidden;
  MemoryTracker* mem = ctx_.memory();
  TrackedBuffer<T> x(mem, MemoryCategory::Buffers, width), y(mem, MemoryCategory::Buffers, width);
  if (chunk.first) {
    embedding_forward(*mb, x.data());
  } else {
    // Waiting for the previous stage: not an op of the program (its send is), timed apart.
    ScopedOpTimer timer(*ctx_.backend, "pp_recv");
    const int prev = (me.pp + layout_.pp - 1) % layout_.pp;
    ctx_.groups->pp->recv(x.data(), width, elem_type_of<T>(), prev, tag(m, chunk.virtual_stage, true));
  }
  mb->layers.resize(chunk.layers.size());
  for (size_t i = 0; i < chunk.layers.size(); ++i) {
    chunk.layers[i]->forward(ctx_, x.data(), y.data(), mb->layers[i]);
    std::swap(x, y);
  }
  if (chunk.last) {
    loss_sum_ += head_forward(*mb, x.data());
  } else {
    OpCursor ops(*ctx_.backend, program_->pp_fwd);
    OpScope timer(ops.take("pp_send"));
    auto out = std::make_unique<TrackedBuffer<T>>(std::move(x));
    const int next = (me.pp + 1) % layout_.pp;
    ctx_.groups->pp->send(out->data(), width, elem_type_of<T>(), next, tag(m, chunk.virtual_stage + 1, true));
    pending_sends_.push_back(std::move(out));
  }
  in_flight_[{chunk_index, m}] = std::move(mb);
}

template <class T>
void ModelRuntime<T>::backward(int chunk_index, int m) {
  Chunk& chunk = *chunks_[chunk_index];
  auto node = in_flight_.find({chunk_index, m});
  if (node == in_flight_.end()) throw Error("pipeline schedule runs a backward before its forward");
  MicroBatchState& mb = *node->second;
  const auto& me = ctx_.groups->me;
  const bool last_micro_batch = m == micro_batches_ - 1;
  const long width = ctx_.rows_residual * ctx_.hidden;
  MemoryTracker* mem = ctx_.memory();
  TrackedBuffer<T> d(mem, MemoryCategory::Buffers, width), dx(mem, MemoryCategory::Buffers, width);
  if (chunk.last) {
    head_backward(mb, d.data());
    if (last_micro_batch) {
      grads_ready(final_norm_.get());
      if (head_) grads_ready(head_.get());
    }
  } else {
    ScopedOpTimer timer(*ctx_.backend, "pp_recv");
    const int next = (me.pp + 1) % layout_.pp;
    ctx_.groups->pp->recv(d.data(), width, elem_type_of<T>(), next, tag(m, chunk.virtual_stage, false));
  }
  for (int i = int(chunk.layers.size()) - 1; i >= 0; --i) {
    chunk.layers[i]->backward(ctx_, d.data(), dx.data(), mb.layers[i]);
    std::swap(d, dx);
    if (last_micro_batch) {
      grads_ready(&chunk.layers[i]->params());
      if (chunk.layers[i]->expert_params()) grads_ready(chunk.layers[i]->expert_params());
    }
  }
  if (chunk.first) {
    embedding_backward(mb, d.data());
    if (last_micro_batch) grads_ready(embedding_.get());
  } else {
    OpCursor ops(*ctx_.backend, program_->pp_bwd);
    OpScope timer(ops.take("pp_send"));
    auto out = std::make_unique<TrackedBuffer<T>>(std::move(d));
    const int prev = (me.pp + layout_.pp - 1) % layout_.pp;
    ctx_.groups->pp->send(out->data(), width, elem_type_of<T>(), prev, tag(m, chunk.virtual_stage - 1, false));
    pending_sends_.push_back(std::move(out));
  }
  in_flight_.erase(node);
}

template <class T>
void ModelRuntime<T>::embedding_forward(MicroBatchState& mb, T* out) {
  OpCursor ops(*ctx_.backend, program_->embed_fwd);
  const long H = ctx_.hidden, N = ctx_.rows;
  TrackedBuffer<T> full(ctx_.memory(), MemoryCategory::Buffers, N * H);
  bool reduced = false;
  walk(ops, [&](const Op& op) {
    if (named(op, "embedding")) {
      ctx_.acquire_weights(embedding_.get());
      OpScope timer(ops.take(op.name));
      ctx_.ops<T>().embedding_forward(embedding_->weight(embedding_w_), mb.tokens.data(), N, ctx_.vocab_start,
                                      ctx_.vocab_local, H, full.data());
      embedding_->release_weights();
    } else if (named(op, "embed_allreduce") || named(op, "embed_reducescatter")) {
      // Vocab-parallel: each TP rank contributed its rows.
      ctx_.exit_tp_forward(ops.take(op.name), full.data(), out);
      reduced = true;
    }
  });
  if (!reduced) ctx_.exit_tp_forward(OpHandle{}, full.data(), out);  // tp = 1
}

template <class T>
void ModelRuntime<T>::embedding_backward(MicroBatchState& mb, const T* dout) {
  OpCursor ops(*ctx_.backend, program_->embed_bwd);
  const long H = ctx_.hidden, N = ctx_.rows;
  TrackedBuffer<T> full(ctx_.memory(), MemoryCategory::Buffers, N * H);
  bool gathered = false;
  walk(ops, [&](const Op& op) {
    if (named(op, "embed_reducescatter")) {  // SP: the gradient's all-gather
      ctx_.exit_tp_backward(ops.take(op.name), dout, full.data());
      gathered = true;
    } else if (named(op, "embedding")) {
      if (!gathered) ctx_.exit_tp_backward(OpHandle{}, dout, full.data());
      embedding_->acquire_grads();
      {
        OpScope timer(ops.take(op.name));
        ctx_.ops<T>().embedding_backward(full.data(), mb.tokens.data(), N, ctx_.vocab_start, ctx_.vocab_local, H,
                                         embedding_->grad(embedding_w_));
      }
      ctx_.release_grads(embedding_.get(), nullptr);
    }
  });
}

template <class T>
double ModelRuntime<T>::head_forward(MicroBatchState& mb, const T* x) {
  const long H = ctx_.hidden, N = ctx_.rows, Nr = ctx_.rows_residual, Vl = ctx_.vocab_local;
  MemoryTracker* mem = ctx_.memory();
  const auto A = MemoryCategory::Activations, Bf = MemoryCategory::Buffers;
  OpCursor ops(*ctx_.backend, program_->head_fwd);
  ParamGroup<T>* head = head_ ? head_.get() : embedding_.get();
  const int w = head_ ? head_w_ : embedding_w_;
  // The logits live only through the loss forward; they are the cost model's "one set of logits"
  // (StageEdges::logits_bytes) and are charged to activations like it.
  TrackedBuffer<T> logits, full;
  const T* head_full = nullptr;  // the head GEMM's input: the normed rows, gathered under SP
  double loss = 0;
  walk(ops, [&](const Op& op) {
    if (named(op, "final_norm")) {
      mb.head_in.reset(mem, A, Nr * H);
      ctx_.copy(mb.head_in.data(), x, Nr * H);
      mb.head_normed.reset(mem, A, Nr * H);
      mb.norm_mean.reset(mem, A, model_.norm == NormKind::LayerNorm ? Nr : 0);
      mb.norm_rstd.reset(mem, A, Nr);
      ctx_.acquire_weights(final_norm_.get());
      {
        OpScope timer(ops.take(op.name));
        if (model_.norm == NormKind::LayerNorm)
          ctx_.ops<T>().layernorm_forward(x, final_norm_->weight(final_norm_w_), final_norm_->weight(final_norm_b_),
                                mb.head_normed.data(), mb.norm_mean.data(), mb.norm_rstd.data(), int(Nr), int(H),
                                T(ctx_.norm_eps));
        else
          ctx_.ops<T>().rmsnorm_forward(x, final_norm_->weight(final_norm_w_), mb.head_normed.data(), mb.norm_rstd.data(), int(Nr),
                              int(H), T(ctx_.norm_eps));
      }
      final_norm_->release_weights();
      head_full = mb.head_normed.data();
    } else if (named(op, "head_allgather")) {
      TrackedBuffer<T>& into = ctx_.sp_keeps_gathered ? mb.head_full : full;
      into.reset(mem, ctx_.sp_keeps_gathered ? A : Bf, N * H);
      ctx_.enter_tp_forward(ops.take(op.name), mb.head_normed.data(), into.data());
      head_full = into.data();
    } else if (named(op, "lm_head")) {
      logits.reset(mem, A, N * Vl);
      ctx_.acquire_weights(head);
      ctx_.gemm(ops.take(op.name), false, true, N, Vl, H, head_full, head->weight(w), T(0), logits.data());
      head->release_weights();
      full.free();
    } else if (named(op, "cross_entropy")) {
      // The loss's three all-reduces run inside it (each needs the last): timed apart as loss_allreduce.
      const OpHandle loss_op = ops.take(op.name), reduce = ops.take_collective("loss_allreduce");
      OpScope timer(loss_op);
      Communicator& tp = ctx_.tp();
      TrackedBuffer<T> row_max(mem, Bf, N), row_sumexp(mem, Bf, N), target(mem, Bf, N);
      DeviceOps<T>& ops = ctx_.ops<T>();
      ops.logits_rowmax(logits.data(), row_max.data(), int(N), int(Vl));
      {
        OpScope reducing(reduce);
        tp.all_reduce_max(row_max.data(), N);
      }
      ops.logits_sumexp(logits.data(), row_max.data(), row_sumexp.data(), int(N), int(Vl));
      {
        OpScope reducing(reduce);
        tp.all_reduce_sum(row_sumexp.data(), N);
      }
      ops.target_logit(logits.data(), mb.targets.data(), int(ctx_.vocab_start), target.data(), int(N), int(Vl));
      {
        OpScope reducing(reduce);
        tp.all_reduce_sum(target.data(), N);
      }
      mb.softmax.reset(mem, A, N * Vl);
      ops.softmax(logits.data(), row_max.data(), row_sumexp.data(), mb.softmax.data(), int(N), int(Vl));
      // The loss itself from the rows' statistics, read back to the host (N values each).
      const std::vector<T> max_h = row_max.to_host(), sumexp_h = row_sumexp.to_host(), target_h = target.to_host();
      for (long r = 0; r < N; ++r) loss += std::log(double(sumexp_h[r])) + max_h[r] - target_h[r];
    }
  });
  return ctx_.groups->me.tp == 0 ? loss : 0.0;  // every TP rank holds the same loss; count it once
}

template <class T>
void ModelRuntime<T>::head_backward(MicroBatchState& mb, T* dx) {
  const long H = ctx_.hidden, N = ctx_.rows, Nr = ctx_.rows_residual, Vl = ctx_.vocab_local;
  MemoryTracker* mem = ctx_.memory();
  const auto Bf = MemoryCategory::Buffers;
  OpCursor ops(*ctx_.backend, program_->head_bwd);
  ParamGroup<T>* head = head_ ? head_.get() : embedding_.get();
  const int w = head_ ? head_w_ : embedding_w_;
  // The head's TP entry in backward: reduce-scatter under SP (head_allgather), all-reduce without
  // (head_grad_allreduce); neither at tp = 1.
  const char* enter_name = ctx_.sp ? "head_allgather" : "head_grad_allreduce";
  TrackedBuffer<T> dlogits, dfull, dnormed, full;
  bool head_held = false;
  // The head's weights and gradients are held across its two backward GEMMs.
  auto hold_head = [&] {
    if (head_held) return;
    ctx_.acquire_weights(head);
    head->acquire_grads();
    head_held = true;
  };
  auto release_head = [&] {
    if (!head_held) return;
    ctx_.release_grads(head, nullptr);
    head->release_weights();
    head_held = false;
    full.free();
  };
  auto reduce_input_grad = [&](const OpHandle& enter) {
    release_head();
    dnormed.reset(mem, Bf, Nr * H);
    ctx_.enter_tp_backward(enter, dfull.data(), dnormed.data());
    dfull.free();
  };
  walk(ops, [&](const Op& op) {
    if (named(op, "cross_entropy")) {
      // d loss / d logit = (softmax - onehot(target)) / tokens of the global batch.
      OpScope timer(ops.take(op.name));
      dlogits.reset(mem, Bf, N * Vl);
      const T dloss = T(1.0 / (double(work_.global_batch) * double(work_.seq)));
      ctx_.ops<T>().softmax_cross_entropy_backward(mb.softmax.data(), mb.targets.data(), int(ctx_.vocab_start), dloss,
                                                   dlogits.data(), int(N), int(Vl));
      mb.softmax.free();
    } else if (named(op, "head_regather")) {
      // Megatron re-gathers the saved shard for the weight gradient, before the input gradient.
      full.reset(mem, Bf, N * H);
      ctx_.enter_tp_forward(ops.take(op.name), mb.head_normed.data(), full.data());
    } else if (named(op, "lm_head") && !op.weight_grad) {
      hold_head();
      dfull.reset(mem, Bf, N * H);
      ctx_.gemm(ops.take(op.name), false, false, N, H, Vl, dlogits.data(), head->weight(w), T(0), dfull.data());
    } else if (named(op, "lm_head")) {
      hold_head();
      const OpHandle gemm_w = ops.take(op.name, true);
      const T* head_full = mb.head_normed.data();
      if (ctx_.sp_keeps_gathered) {
        head_full = mb.head_full.data();
      } else if (ctx_.sp) {
        if (full.empty()) throw Error("the step program holds no re-gather of the head's SP input");
        head_full = full.data();
      }
      ctx_.gemm(gemm_w, true, false, Vl, H, N, dlogits.data(), head_full, T(1), head->grad(w));
      mb.head_full.free();
    } else if (named(op, enter_name)) {
      reduce_input_grad(ops.take(op.name));
    } else if (named(op, "final_norm")) {
      if (dnormed.empty()) reduce_input_grad(OpHandle{});  // tp = 1
      dlogits.free();
      ctx_.acquire_weights(final_norm_.get());
      final_norm_->acquire_grads();
      {
        OpScope timer(ops.take(op.name));
        if (model_.norm == NormKind::LayerNorm)
          ctx_.ops<T>().layernorm_backward(dnormed.data(), mb.head_in.data(), final_norm_->weight(final_norm_w_), mb.norm_mean.data(),
                                 mb.norm_rstd.data(), dx, final_norm_->grad(final_norm_w_), final_norm_->grad(final_norm_b_),
                                 int(Nr), int(H));
        else
          ctx_.ops<T>().rmsnorm_backward(dnormed.data(), mb.head_in.data(), final_norm_->weight(final_norm_w_), mb.norm_rstd.data(),
                               dx, final_norm_->grad(final_norm_w_), int(Nr), int(H));
      }
      ctx_.release_grads(final_norm_.get(), ctx_.sp ? &ctx_.tp() : nullptr);
      final_norm_->release_weights();
    }
  });
}

template <class T>
void ModelRuntime<T>::grads_ready(ParamGroup<T>* group) {
  if (layout_.zero >= 2 || layout_.dp_overlap == DpOverlap::None) return;
  // The SP-partial sums over TP (Megatron's layer-norm gradient all-reduce) are timed with the
  // group's reduction: the program has no op of their own.
  OpScope timer(ctx_.dp.reduce(group->expert()));
  group->reduce_tp_partials(ctx_.tp());
  if (layout_.dp_overlap == DpOverlap::PerLayer) {
    group->start_gradient_reduction();
    ready_.push_back(group);
    return;
  }
  bucket_.push_back(group);
  bucket_bytes_ += double(group->padded()) * sizeof(T);
  if (bucket_bytes_ >= gradient_bucket_bytes(layout_, work_)) {
    for (auto* g : bucket_) {
      OpScope starting(ctx_.dp.reduce(g->expert()));
      g->start_gradient_reduction();
      ready_.push_back(g);
    }
    bucket_.clear();
    bucket_bytes_ = 0;
  }
}

template <class T>
void ModelRuntime<T>::finish_gradients() {
  if (layout_.zero < 2) {
    if (layout_.dp_overlap == DpOverlap::None) {
      for (auto* g : param_groups()) {
        OpScope timer(ctx_.dp.reduce(g->expert()));
        g->reduce_tp_partials(ctx_.tp());
        g->reduce_gradients_blocking();
      }
    } else {
      for (auto* g : bucket_) {
        OpScope timer(ctx_.dp.reduce(g->expert()));
        g->start_gradient_reduction();
        ready_.push_back(g);
      }
      bucket_.clear();
      if (ready_.size() != param_groups().size())
        throw Error("gradient overlap: " + std::to_string(ready_.size()) + " of " +
                    std::to_string(param_groups().size()) + " parameter groups were reduced");
      for (auto* g : ready_) {
        OpScope timer(ctx_.dp.reduce(g->expert()));
        g->wait_reduction();
      }
    }
  }
  if (model_.tied_embeddings && layout_.pp > 1) {
    // Megatron's embedding-group gradient sum of the two tied copies: not an op of the program.
    ScopedOpTimer timer(*ctx_.backend, "tied_embedding_grad_allreduce");
    if (embedding_) embedding_->all_reduce_grads_over(*ctx_.groups->embedding);
    if (head_) head_->all_reduce_grads_over(*ctx_.groups->embedding);
  }
}

template class ModelRuntime<float>;
template class ModelRuntime<double>;

}  // namespace sixfold
