#pragma once
// One pre-norm decoder layer on one rank, run from its step program: the layer walks the
// program's op list (forward, or backward with the ops its recompute policy re-runs first) in
// order and hands each op to the handler of its kind (program_ops.hpp: an op without a handler,
// or one a handler leaves out, fails the run):
//   h = x + W_o · attn(rope(W_q n1), rope(W_k n1), W_v n1),  n1 = norm(x)
//   y = h + FFN(norm(h)),  FFN = SwiGLU/GELU MLP (dense) or MoE
// with Megatron tensor parallelism (q/k/v and gate/up column-parallel, o and down row-parallel,
// heads and FFN columns split over tp), sequence parallelism (norms on sequence shards) and
// context parallelism (ring attention). Weights are stored [in, out] so that y = x W.
// The ring attention runs with its K/V exchange (the handler takes both); an MoE layer's router,
// permutations, all-to-alls and experts go to its MoeBlock, op by op (moe_runtime.hpp). A
// residual's backward is the sum where its two branches meet: its op is taken where the list has
// it and its add timed under it after the branch's norm.
// Saved for backward as Megatron saves it (models/step_program.cpp is the spec): the layer input,
// the norm outputs as sequence shards under SP (re-gathered in backward, as Megatron's
// LinearWithGradAccumulationAndAsyncCommunication does), q, k, v, the attention output and its
// fp32 log-sum-exp (not the probabilities), the residual, and gate, up and activation of the MLP.
// Recompute: none saves all of these; selective drops the log-sum-exp and recomputes the core
// attention in backward (q, k, v stay saved as the checkpoint's inputs and the attention output as
// the output projection's input: Korthikanti et al. 2022, section 5); full keeps only the layer
// input and reruns the whole forward in backward. What is recomputed lives in Buffers. Under partial
// recompute (Megatron's block method, torchtitan's every k-th layer) the layers keeps_activations
// marks recompute nothing.
#include <memory>
#include <optional>

#include "executor/runtime/exec_context.hpp"
#include "executor/runtime/moe_runtime.hpp"
#include "executor/runtime/param_store.hpp"

namespace sixfold {

template <class T>
struct LayerSaved {
  // n1, norm2_out: norm outputs [rows_residual, H] (the sequence shard under SP).
  TrackedBuffer<T> x, norm1_mean, norm1_rstd, n1, q, k, v, attn_out, lse, h, norm2_out, norm2_mean, norm2_rstd, gate,
      up, act;
  // The gathered inputs of the attention and MLP column-parallel GEMMs, where SP keeps them for the
  // weight gradient (ExecContext::sp_keeps_gathered).
  TrackedBuffer<T> attn_full, mlp_full;
  MoeSaved<T> moe;
  bool complete = false;  // false after full recompute dropped everything but x
};

template <class T>
class TransformerLayer {
 public:
  // kept: a layer that partial recompute leaves out (keeps_activations): it keeps its
  // activations and runs the program's kept lists.
  TransformerLayer(const ExecContext& ctx, int layer, std::uint64_t seed, bool kept = false);
  int index() const { return layer_; }
  ParamGroup<T>& params() { return *params_; }
  ParamGroup<T>* expert_params() { return experts_.get(); }

  // x, out: [rows_residual, H].
  void forward(const ExecContext& ctx, const T* x, T* out, LayerSaved<T>& saved);
  // dout -> dx (written), gradients accumulated; saved is consumed.
  void backward(const ExecContext& ctx, const T* dout, T* dx, LayerSaved<T>& saved);

 private:
  struct Forward;   // one forward run's buffers (the forward list, or the backward's re-run)
  struct Backward;  // the backward's
  // Walks the cursor's list: forward ops (a backward list's re-run ones too) to forward_op,
  // backward ops to backward_op; then checks that every op ran.
  void run(const ExecContext& ctx, OpCursor& ops, Forward& f, Backward* b);
  void forward_op(const ExecContext& ctx, OpCursor& ops, const Op& op, Forward& f);
  void backward_op(const ExecContext& ctx, OpCursor& ops, const Op& op, Backward& b);
  // Under SP the all-gather of a saved norm-output shard into `full`, counted under `category`
  // and timed under `op`; else the shard itself.
  const T* gathered(const ExecContext& ctx, const OpHandle& op, const TrackedBuffer<T>& shard, TrackedBuffer<T>& full,
                    MemoryCategory category = MemoryCategory::Buffers) const;
  void norm_forward(const ExecContext& ctx, const OpHandle& op, int w, int b, const T* in, T* out, T* mean, T* rstd,
                    long rows);
  void norm_backward(const ExecContext& ctx, const OpHandle& op, int w, int b, const T* dy, const T* x, const T* mean,
                     const T* rstd, T* dx, long rows);
  MoeWeights<T> moe_weights();
  MoeGrads<T> moe_grads();

  int layer_;
  bool moe_ = false, swiglu_ = true, squared_relu_ = false, layernorm_ = false;
  bool kept_ = false;
  // The layout's recompute policy, or none for a layer partial recompute keeps.
  Recompute policy(const ExecContext& ctx) const { return kept_ ? Recompute::None : ctx.layout->recompute; }
  std::unique_ptr<ParamGroup<T>> params_, experts_;
  int norm1_w_ = -1, norm1_b_ = -1, wq_ = -1, wk_ = -1, wv_ = -1, wo_ = -1, norm2_w_ = -1, norm2_b_ = -1;
  int w_gate_ = -1, w_up_ = -1, w_down_ = -1, router_ = -1;
  std::vector<int> ex_gate_, ex_up_, ex_down_;
};

}  // namespace sixfold
