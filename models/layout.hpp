#pragma once
// The parallel layout of a training run and the workload it runs. It lives in models/ (not
// simulator/ as DESIGN.md first said) because expanding a model into its step program needs it,
// and models/ sits below simulator/.
#include <string>
#include <vector>

#include "common/units.hpp"
#include "models/model_spec.hpp"

namespace sixfold {

enum class Dtype { FP32, TF32, BF16, FP16, FP8 };
// Selective: Megatron's core-attention recompute (Korthikanti et al. 2022). SelectiveOp:
// torchtitan's op-level selective checkpointing (every other matmul output and the attention
// output saved, the rest recomputed). Full: only each layer's input saved.
enum class Recompute { None, Selective, SelectiveOp, Full };
// What selective recompute re-runs, as Megatron-Core's --recompute-modules names it (bit set).
// The empty set means Megatron's default, core attention.
namespace recompute_module {
inline constexpr unsigned kCoreAttn = 1, kMlp = 2, kLayernorm = 4, kMlaUpProj = 8, kMoe = 16, kMoeAct = 32,
                          kSharedExperts = 64;
}
// "core_attn,mla_up_proj" <-> bits; parse throws UsageError naming the allowed modules.
unsigned parse_recompute_modules(const std::string& list);
std::string recompute_modules_string(unsigned modules);  // in Megatron's order, comma-separated
// The module sets of Megatron's selective recompute worth trying for a model: core attention (0,
// the default), then adding the MoE activation, the norms and MLA's up-projections where the model
// has them, each saving more memory and re-running more than the one before; for MLA models also
// DeepSeek-V3's own set, the norms, MLA's up-projections and the MoE activation without the core
// attention (cheaper to re-run, and MLA's up-projected K and V are its largest activation).
std::vector<unsigned> selective_module_ladder(const ModelSpec& model);
// How DP gradients are reduced: after the whole backward (the seed's "DP naive"), one
// non-blocking all-reduce per layer during backward ("DP interleaved"), or DDP-style buckets.
enum class DpOverlap { None, PerLayer, Bucketed };
enum class Schedule { GPipe, OneFOneB, Interleaved, ZeroBubble };
// The training framework whose implementation choices the cost model follows where frameworks
// differ (framework_traits below). Megatron: Megatron-LM/Megatron-Core and NeMo. DeepSpeed: the
// DeepSpeed engine, Megatron-DeepSpeed included. DeepSpeedLegacy: DeepSpeed before mid-2021,
// whose ZeRO-3 synchronised the GPU before every parameter gather (fixed by DeepSpeed PR #1188,
// June 2021). Torchtitan: PyTorch FSDP2/DTensor (torchtitan).
enum class Framework { Megatron, DeepSpeed, DeepSpeedLegacy, Torchtitan };

// The flash-attention kernel a run's attention goes through, each priced from its own measured
// speed (docs/kernel-tables.md, "Training attention"): FlashAttention 1.x (flash-attn < 2,
// PyTorch 2.0-2.1's SDPA flash backend), FlashAttention-2 (flash-attn 2.x, PyTorch >= 2.2 SDPA),
// or Transformer Engine's fused attention, which prefers cuDNN's kernel on Hopper and later
// (transformer_engine/pytorch/attention/dot_product_attention/utils.py, get_attention_backend:
// "give FusedAttention preference on Hopper+") and runs FlashAttention-2 on Ampere. Default: the
// framework's (FrameworkTraits::attention_kernel).
enum class AttentionKernel { Default, Flash1, Flash2, TeFused };

// How the loss runs over the logits, each keeping its own copies (step_program.cpp,
// add_output_head): Megatron's vocab-parallel cross-entropy works in place on one fp32 copy and
// keeps the fp32 softmax; F.cross_entropy on fp32-upcast logits (torchtitan) keeps the
// log-softmax and in its backward holds the incoming and outgoing fp32 gradients beside it;
// flash-attn's fused cross-entropy (flash_attn/losses/cross_entropy.py, one kernel on the
// low-precision logits) keeps those logits and the log-sum-exp, and its backward writes one
// low-precision gradient; torch.compile'd F.cross_entropy (torchtitan with compile on, since
// commit bbb1b616e, 2025-04-02, components/loss.py build_cross_entropy_loss) is the same fusion:
// Inductor folds the fp32 cast, log-softmax and gather into reductions over the low-precision
// logits, saves them and the log-sum-exp, and writes one low-precision gradient. Default: the
// framework's (FrameworkTraits::cross_entropy; torchtitan with Workload::compile: TorchCompiled).
enum class CrossEntropy { Default, MegatronFp32, TorchFp32, FlashAttnFused, TorchCompiled };
// torchao's float8 scaling recipe under torchtitan ([quantize.linear.float8] recipe_name; torchao
// float8/config.py Float8LinearConfig.from_recipe_name). Tensorwise: one dynamic scale per tensor,
// what torchtitan runs when recipe_name is unset. Rowwise: a scale per row of every GEMM operand
// along its reduction dimension. RowwiseWithGwHp: rowwise for the output and input gradient, the
// weight gradient in bf16.
enum class Float8Recipe { Tensorwise, Rowwise, RowwiseWithGwHp };
// The losses that run as one fused pass over the low-precision logits.
inline bool fused_cross_entropy(CrossEntropy c) {
  return c == CrossEntropy::FlashAttnFused || c == CrossEntropy::TorchCompiled;
}

// What differs between frameworks and changes memory or time.
struct FrameworkTraits {
  // The flash-attention kernel the framework runs today: Megatron-Core's TransformerEngine layers
  // (--transformer-impl transformer_engine, the default); torchtitan's PyTorch SDPA; DeepSpeed's
  // models call flash-attn 2.x.
  AttentionKernel attention_kernel = AttentionKernel::Flash2;
  // The loss over the logits: Megatron's vocab-parallel cross-entropy; torchtitan's
  // F.cross_entropy on fp32-upcast logits (CrossEntropy above).
  CrossEntropy cross_entropy = CrossEntropy::MegatronFp32;
  // FSDP2 (fully_shard: per-parameter DTensor shards) gathers a layer's shards into one all-gather
  // buffer and then copies each parameter out of it into its own unsharded tensor, on the compute
  // stream before the layer runs (torch/distributed/_composable/fsdp/_fsdp_param_group.py
  // wait_for_unshard -> foreach_all_gather_copy_out, record_function "FSDP::all_gather_copy_out";
  // PyTorch 2.4-2.6): a read and a write of the gathered bytes per gather. FSDP1's FlatParameter
  // gathers into the flat buffer its parameters are views of (no copy: Workload::fsdp1), as do
  // DeepSpeed's ZeRO-3 and Megatron-FSDP's buffers.
  bool zero3_copies_out_gathers = false;
  // ZeRO-3 gathers: DeepSpeed's stage 3 all-gathers each weight on its own (tensors under
  // stage3_param_persistence_threshold, 1e5 elements, i.e. biases and norms, stay resident); FSDP
  // and Megatron-FSDP gather one flat buffer per layer.
  bool zero3_gather_per_tensor = false;
  // DeepSpeed releases a weight after its forward and gathers it again for the recomputed
  // forward of activation checkpointing; FSDP recomputes inside the layer's backward, whose
  // parameters are already gathered.
  bool zero3_regathers_for_recompute = false;
  // Every ZeRO-3 collective waits for the GPU (torch.cuda.synchronize before each all-gather,
  // DeepSpeed issue #1069 / PR #1188): nothing overlaps with compute.
  bool zero3_synchronous = false;
  // ZeRO-3 collectives through PyTorch's list forms (torch.distributed.all_gather into one tensor
  // per rank, reduce_scatter from one per rank), as DeepSpeed v0.3 called them
  // (partition_parameters.py _allgather_param / _reduce_scatter_gradient at v0.3.15, 2021-04):
  // ProcessGroupNCCL gathers into a flat buffer of its own and copies it out to the rank's tensors
  // one copy per rank (the inverse for reduce-scatter), after DeepSpeed zero-filled the gathered
  // buffer. Later DeepSpeed gathers into one flat tensor (_all_gather_base; PR #1188 names these
  // copies). Priced in dp_traffic (list_collective_extra).
  bool zero3_list_collectives = false;
  // ZeRO-3 reduce-scatters gradients in DP buckets (DeepSpeed's reduce_bucket_size,
  // gradient_bucket_bytes) rather than one per layer (FSDP).
  bool zero3_reduces_in_buckets = false;
  // ZeRO-2 as FSDP runs it (FSDP1's ShardingStrategy.SHARD_GRAD_OP, FSDP2's
  // reshard_after_forward=False): each layer's flat gradient is reduce-scattered by its own
  // post-backward hook as soon as that layer's backward ends (torch/distributed/fsdp/
  // _runtime_utils.py _post_backward_hook -> _reduce_grad), one collective per layer and micro-batch,
  // not DDP's 25 MiB buckets; DeepSpeed and Megatron reduce ZeRO-1/2 gradients in their buckets.
  bool zero2_reduces_per_layer = false;
  // Megatron's distributed optimizer overlaps the parameter all-gather after the step with the
  // next forward (--overlap-param-gather) when DP overlap is on; DeepSpeed's ZeRO-1/2 gathers
  // after the step, exposed.
  bool overlap_param_gather = false;
  // torchtitan does not reshard FSDP parameters after the forward when pipelining ("to avoid
  // per-microbatch all-gathers", parallelize_llama.py): each stage keeps its parameters gathered
  // through the step, gathering once per step instead of once per micro-batch, and the pipeline
  // stage turns gradient sync off for all but the last micro-batch (torch.distributed.pipelining),
  // so gradients accumulate unsharded, in FSDP2's fp32 reduce dtype.
  bool zero3_keeps_params_under_pp = false;
  // With sequence parallelism, DTensor's autograd (torchtitan) saves the all-gathered input of
  // each column-parallel GEMM; Megatron saves the sharded one and gathers it again.
  bool sp_keeps_gathered_input = false;
  // Gradients kept and reduced in fp32 under bf16/fp8 training: Megatron-LM forces
  // accumulate_allreduce_grads_in_fp32 for bf16 (arguments.py); FSDP2's default mixed precision
  // reduces in fp32 and keeps fp32 sharded gradients (torchtitan's mixed_precision_reduce).
  bool fp32_gradients = false;
  // Megatron-Core's experts weight each token by its routing probability inside the SwiGLU
  // (weighted_bias_swiglu_impl in TEGroupedMLP; the dispatcher's unpermute gets no probs), so the
  // backward needs only the activation's input and the probabilities. DeepSpeed's combine and
  // torchtitan's scoring multiply a hidden-wide tensor by the scores and keep it for the scores'
  // gradient: top-k x hidden values per token.
  bool moe_probs_in_activation = false;
  // Context parallelism through PyTorch's experimental ring attention (torchtitan; torch
  // distributed/tensor/experimental/_attention.py, rotate method "allgather", torchtitan's default
  // --experimental.context_parallel_rotate_method): the forward and the backward all-gather every
  // rank's K and V into one buffer, and the backward accumulates dQ, dK, dV in fp32 and passes dK, dV
  // around the ring in fp32 (convert_to_f32). Megatron's TransformerEngine CP exchanges one K/V
  // chunk at a time (AttnFuncWithCPAndKVP2P) and holds no cp-wide buffer.
  bool cp_gathers_kv = false;
  // Without torch.compile the model's pointwise pieces run as the eager PyTorch ops they are
  // written in, one kernel each with its own pass over memory (torchtitan 9dec370,
  // torchtitan/models/norms.py RMSNorm: x.float(), pow, mean, rsqrt, mul, type_as, mul by the
  // weight; models/llama/model.py apply_rotary_emb: float, complex mul, type_as for Q and K;
  // FeedForward: silu, then mul); compiled, Inductor fuses each into one kernel. Megatron and
  // DeepSpeed's Megatron models call fused kernels (TransformerEngine / Apex norms, fused RoPE and
  // bias-SwiGLU). Priced in the step program (eager_composites).
  bool eager_pointwise_composites = false;
  // TP communication overlap fuses a reduce-scatter only with the one matmul producing its input
  // (PyTorch's async TP, torch/_inductor/fx_passes/micro_pipeline_tp.py: the reduce-scatter's
  // input must come from a matmul). The backward of a block's sequence-parallel all-gather
  // reduce-scatters the sum of the input gradients of every matmul that read the gathered input
  // (torchtitan's separate wq, wk, wv and w1, w3), so it stays exposed. TransformerEngine's
  // userbuffers overlap it with the fused QKV / FC1 dgrad GEMM (Megatron).
  bool tp_overlap_single_matmul = false;
  // TP comm overlap pipelines a fused GEMM against its collective in chunks, so only part of the
  // GEMM can run under the transfer. All-gathers split into tp chunks (the local shard's first,
  // each remote one as it arrives: TransformerEngine's ring exchange, PyTorch's
  // _pipelined_all_gather_and_consume). The GEMM before a forward reduce-scatter: TransformerEngine
  // (Megatron) splits it into 4 and reduce-scatters each chunk as it finishes, the last one after
  // the GEMM ("pipeline" method, num_splits 4: transformer_engine/pytorch/module/base.py
  // initialize_ub's default config); PyTorch's async TP splits it into tp chunks, one per
  // destination rank and its own last, then sums the tp partials of its shard in one more kernel
  // (torch/distributed/_symmetric_memory/__init__.py, _fused_matmul_reduce_scatter_impl:
  // _pipelined_produce_and_all2all, then torch.sum over the stacked partials). Priced in
  // simulator/op_list_cost.cpp.
  int tp_overlap_rs_chunks = 4;           // 0: the TP size
  bool tp_overlap_rs_tail = true;         // the last chunk's reduce-scatter follows the GEMM
  bool tp_overlap_rs_local_sum = false;   // the partials are summed after the exchange
  // torch.distributed.pipelining (torchtitan's pipeline) allocates, on the first step, a receive
  // buffer per micro-batch and keeps it for the run: one for the stage's input on every stage but
  // the first (PipelineStage._prepare_forward_infra), one for the gradient of its output on every
  // stage but the last (_prepare_backward_infra -> _create_grad_recv_info). The input buffer is the
  // tensor the stage's forward reads, so the micro-batches in flight hold it as their activation
  // anyway. Megatron and DeepSpeed receive into a fresh tensor per transfer. Priced in
  // simulator/framework_memory.cpp.
  bool pp_receive_buffer_per_micro_batch = false;
};
FrameworkTraits framework_traits(Framework f);

struct Layout {
  int dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int etp = 1;        // expert tensor parallel size (Megatron-Core); ep*etp divides tp*cp*dp
  bool sp = false;    // Megatron sequence parallelism (needs tp > 1)
  int zero = 0;       // 0 DDP, 1 optimizer states, 2 + gradients, 3 + parameters sharded over dp (x cp)
  // Hybrid sharding: the data-parallel ranks one ZeRO shard spans (x cp), the rest of dp holding
  // replicas of it (PyTorch FSDP's HYBRID_SHARD / HSDP, torchtitan's data_parallel_shard_degree with
  // data_parallel_replicate_degree = dp / dp_shard, Megatron's --num-distributed-optimizer-instances
  // = dp / dp_shard, DeepSpeed's MiCS mics_shard_size). Gradients reduce-scatter within a shard
  // group, then all-reduce across the replicas of each shard. 0: the whole of dp (no replicas).
  int dp_shard = 0;
  Count micro_batch = 1;
  Recompute recompute = Recompute::None;
  unsigned recompute_modules = 0;  // selective recompute's modules; 0: core attention (Megatron's default)
  // Megatron's block recompute (--recompute-granularity full --recompute-method block
  // --recompute-num-layers N): under full recompute, only the first N transformer layers of each
  // virtual stage re-run their forward; the others keep every activation and recompute nothing
  // (megatron/core/transformer/transformer_block.py _checkpointed_forward, 'block'; in Megatron-LM
  // since 2022-05, commit bbab79f, with selective recompute). 0: every layer (--recompute-method
  // uniform --recompute-num-layers 1, what `full` means).
  int recompute_num_layers = 0;
  // torchtitan's layer-level selective checkpointing (activation_checkpoint.mode = "selective",
  // selective_ac_option = "k"): every k-th transformer block a rank builds is checkpointed whole
  // (re-runs its forward), the others keep every activation (torchtitan parallelize_llama.py
  // _apply_ac_to_transformer_block: `_count % ac_freq == 0`, the count running over the rank's
  // blocks in order). Held under full recompute; 0: every layer.
  int recompute_every = 0;
  bool block_recompute() const { return recompute == Recompute::Full && recompute_num_layers > 0; }
  // Full recompute of some layers only (block recompute or every k-th layer): the rest keep their
  // activations (keeps_activations).
  bool partial_recompute() const { return recompute == Recompute::Full && (recompute_num_layers > 0 || recompute_every > 0); }
  DpOverlap dp_overlap = DpOverlap::Bucketed;
  Bytes bucket_bytes = 0;  // DP gradient bucket; 0: the framework's default (gradient_bucket_bytes)
  bool tp_overlap = false;         // TP communication overlapped with GEMMs (TransformerEngine userbuffers)
  Schedule schedule = Schedule::OneFOneB;
  // Uneven pipelines: transformer layers on the first and last stage; 0 = even split.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // Megatron's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split:
  // the embedding (loss) takes a layer's place in the first (last) virtual stage, which builds one
  // transformer layer fewer; layers + embedding + loss divide evenly into pp x vpp virtual stages
  // (how NeMo runs Llama 3.1 405B's 126 layers on pp 8 x vpp 8).
  bool embedding_in_pipeline_split = false;
  bool loss_in_pipeline_split = false;
  bool accounts_pipeline_split() const { return embedding_in_pipeline_split || loss_in_pipeline_split; }
  // Megatron's --pipeline-model-parallel-layout text (models/pipeline_layout.hpp): the transformer
  // layers, embedding, MTP layers and loss of every virtual stage, any split at all; "": none.
  std::string pipeline_layout;

  // The data-parallel ranks a ZeRO shard spans, and how many replicas of it dp holds.
  int shard_dp() const { return dp_shard > 0 && dp_shard < dp ? dp_shard : dp; }
  int shard_replicas() const { return dp / shard_dp(); }
  int gpus() const { return dp * tp * pp * cp; }
  Count model_parallel() const { return Count(tp) * pp * cp; }  // GPUs of one data-parallel replica
  int virtual_stages() const { return schedule == Schedule::Interleaved ? vpp : 1; }
  bool operator==(const Layout&) const = default;
};

struct Workload {
  Count seq = 2048;
  Count global_batch = 1;  // sequences per optimizer step
  Dtype dtype = Dtype::BF16;
  // Flash attention (the default in every current framework) keeps no s x s scores; without it
  // the softmax, its dropout mask and output are saved (Korthikanti et al. 2022, Table 2).
  bool flash_attention = true;
  AttentionKernel attention_kernel = AttentionKernel::Default;
  CrossEntropy cross_entropy = CrossEntropy::Default;
  // Cross-entropy passes over the logits, without gradients, after each micro-batch's backward:
  // Composer updates its training metrics so (composer/trainer/trainer.py v0.16.4,
  // _train_microbatch -> _eval_train_metrics; llm-foundry's MPT trains with two,
  // LanguageCrossEntropy and LanguagePerplexity, each a torch.nn.CrossEntropyLoss).
  int train_metric_passes = 0;
  // Megatron-Core's interleaved schedule posts each chunk's pipeline send and the next receive
  // without blocking and waits only where the data is needed (overlap_p2p_comm; the default since
  // Megatron-LM commit 4eeff55, 2023-10-23, "Make overlap_p2p_comm the default"; off with
  // --no-overlap-p2p-communication). Non-interleaved 1F1B always blocks (arguments.py turns it
  // off), as does DeepSpeed's pipeline engine. See p2p_overlapped().
  bool overlap_p2p_comm = true;
  // DeepSpeed has its BF16_Optimizer (bf16_optimizer_runs()); the validator turns this off for
  // rows dated before it existed (2022-04).
  bool bf16_optimizer = true;
  // From 2022-04 until DeepSpeed PR #3399 (commit dcb4a7d, 2023-05-02, "Add ZeRO 1 support to PP for
  // BF16") the pipeline engine ran bf16 at ZeRO stage 0 only: a ZeRO-1 pipeline row of that time is
  // the BF16_Optimizer's own partitioning (the validator sets this for such rows).
  bool pipeline_bf16_stage0_only = false;
  // MoE all-to-all hidden behind the compute of another micro-batch (Megatron-Core's
  // --overlap-moe-expert-parallel-comm, off by default; DeepSeek-V3's DualPipe, its report section
  // 3.2.1): the dispatch and combine pay only what the compute cannot cover and their hiding cost.
  bool overlap_moe_ep_comm = false;
  // Megatron-Core's flex token dispatcher with DeepEP (--moe-token-dispatcher-type flex
  // --moe-enable-deepep; NVIDIA's HybridEP works alike): a token crosses the network once for each
  // node that holds one of its experts, to the GPU of the same local index there, which forwards it
  // over NVLink (DeepEP's internode kernels; DeepSeek-V3 report 3.2.2). The all-to-all dispatcher
  // sends one copy per expert. Priced in simulator/collective_cost.cpp (node_deduplicated_share).
  bool deepep_dispatch = false;
  Framework framework = Framework::Megatron;
  // Adam's two moments in bf16 instead of fp32 (Megatron-Core's precision-aware optimizer,
  // --exp-avg-dtype/--exp-avg-sq-dtype bf16; DeepSeek-V3 trains so, its report section 3.3).
  bool bf16_adam_moments = false;
  // Megatron-LM's --grad-reduce-in-bf16 (DistributedDataParallelConfig.grad_reduce_in_fp32 off):
  // the DDP gradient buffer, and the reduce-scatter or all-reduce of its buckets, in bf16 where
  // Megatron otherwise keeps them in fp32 for bf16 and fp8 training (arguments.py sets
  // accumulate_allreduce_grads_in_fp32 for bf16; FrameworkTraits::fp32_gradients). NeMo's Apex
  // DistributedFusedAdam with grad_sync_dtype bf16 keeps its gradient buckets so too.
  bool grad_reduce_in_bf16 = false;
  // Megatron-Core's activation_func_fp8_input_store (a config field, no flag): the SwiGLU keeps its input in fp8 for the
  // backward (dense and expert MLPs); DeepSeek-V3 caches the MoE SwiGLU inputs so (its report,
  // section 3.3.4).
  bool fp8_activation_input_store = false;
  // torch.distributed.pipelining's last stage keeps every micro-batch's output (torchtitan's
  // logits, vocabulary-sharded under TP) until the step ends, then step() concatenates them into
  // the batch's output (stage.py forward_one_chunk: output_chunks; schedules.py step:
  // _merge_outputs). torchtitan stopped asking for them on 2025-10-22 (torchtitan #1922,
  // step(return_outputs=False), pytorch #165822); its runs before then held them. Set from a
  // validation row's date (simulator/fit/run_facts.cpp), off for today's torchtitan.
  bool pp_keeps_stage_outputs = false;
  // Multi-token prediction depths trained with the model (Megatron's --mtp-num-layers; DeepSeek-V3
  // trains one, its report section 2.2): each adds, on the last pipeline stage, an embedding of the
  // shifted tokens, two norms, a 2h -> h projection, one transformer layer, the shared output head
  // and its loss.
  int mtp_layers = 0;
  // torchtitan's training.compile (--compile): torch.compile of each transformer block
  // (parallelize_llama.py apply_compile) and, since 2025-04, of the loss (CrossEntropy). Inductor's
  // partitioner saves for the backward only what the backward graph reads, where eager selective
  // checkpointing caches the output of every op its policy saves (step_program.cpp,
  // select_op_checkpoint). Priced for memory and for the loss; the fusion of the blocks'
  // pointwise kernels is not priced (their ops already cost what a fused kernel moves).
  bool compile = false;
  // torchao's float8 all-gather under FSDP2 (torchtitan's enable_fsdp_float8_all_gather, with
  // precompute_float8_dynamic_scale_for_fsdp): each Float8Linear weight is cast to fp8 on its
  // shard before the all-gather (torchao/float8/fsdp_utils.py, WeightWithDynamicFloat8CastTensor.
  // fsdp_pre_all_gather, with the scale one all-reduce of every weight's amax computes after the
  // optimizer step), so the gather moves 1 byte an element and the layer gets an fp8 weight it
  // does not cast again. Off by default, as in torchtitan; see fsdp_float8_gathers().
  bool fsdp_float8_all_gather = false;
  // PyTorch FSDP1 (FullyShardedDataParallel's FlatParameter) rather than FSDP2 (fully_shard), for
  // the torchtitan code path: the gathered parameters are views of the all-gather's flat buffer,
  // with no copy-out (FrameworkTraits::zero3_copies_out_gathers). torchtitan runs FSDP2; the
  // validator sets this for an unnamed FSDP codebase of before FSDP2's first release.
  bool fsdp1 = false;
  // torchtitan fp8 training's float8 recipe (Float8Recipe); priced in step_program.cpp (the casts,
  // the weight gradient's dtype) and there for the TP plan (rowwise runs torchtitan's plain
  // Colwise/RowwiseParallel, gathering bf16), the async-TP fusion and the FSDP float8 all-gather
  // (tensorwise only). Tensorwise by default, as in torchtitan.
  Float8Recipe float8_recipe = Float8Recipe::Tensorwise;
};

// Micro-batches per pipeline per step (gradient accumulation steps).
Count micro_batches_per_step(const Layout& layout, const Workload& work);

// Transformer layers held by each pipeline stage (size pp), first/last overrides applied.
std::vector<int> stage_layer_counts(const ModelSpec& model, const Layout& layout);

// Transformer layers of each virtual stage (index chunk * pp + stage, model order; size pp x vpp
// under the interleaved schedule, else pp): Megatron's equal virtual stages, one fewer in the first
// (last) with the embedding (loss) in the split, and a stage's layers spread as evenly as they go
// over its chunks otherwise (torchtitan).
std::vector<int> virtual_stage_layer_counts(const ModelSpec& model, const Layout& layout);
// The transformer layers that re-run their forward under full recompute: all of them, or under
// partial recompute those keeps_activations leaves out. 0 without full recompute.
int fully_recomputed_layers(const ModelSpec& model, const Layout& layout);
// Under partial recompute, whether the index-th layer (from 0) of virtual stage `chunk` (model
// order: virtual stage c of rank s is chunk c * pp + s; `chunks`: virtual_stage_layer_counts) keeps
// its activations. The one copy of Megatron's block rule and torchtitan's every-k-th rule.
bool keeps_activations(const std::vector<int>& chunks, const Layout& layout, int chunk, int index);

// Megatron derives the virtual stages per rank from a custom pipeline layout (its stage count over
// pp): where the layout is set and vpp was not given, vpp and the interleaved schedule follow it.
// A layout whose stages pp does not divide is left to validate_layout's message.
void take_vpp_from_pipeline_layout(Layout& layout);

// Throws LayoutError naming the violated constraint ("dp*tp*pp*cp = gpus", "tp divides heads",
// "ep*etp divides tp*cp*dp", "global batch divisible by dp*micro-batch", "vpp divides layers per
// stage", ...). gpus <= 0 skips the GPU-count check.
void validate_layout(const ModelSpec& model, const Layout& layout, const Workload& work, int gpus);
// The rules of the workload alone, whatever the layout (validate_layout checks them too): what only
// one framework runs (--compile, --mtp-num-layers, the fp8 SwiGLU input store, DeepEP) and what the
// model must have for it. A search checks them once, before it enumerates layouts.
void validate_workload(const ModelSpec& model, const Workload& work);

// Names as users type them, and parsers that throw UsageError listing the allowed values.
std::string to_string(Dtype d);
std::string to_string(Recompute r);
std::string to_string(DpOverlap o);
// Whether `framework` runs ZeRO stage `zero` under a pipeline of `pp` stages: DeepSpeed's
// PipelineEngine asserts a stage below 2 (deepspeed/runtime/pipe/engine.py); the others do.
// DeepSpeed's engine, current or before mid-2021 (deepspeed, deepspeed-legacy).
bool runs_deepspeed_engine(Framework framework);
bool pipeline_allows_zero(Framework framework, int pp, int zero);
// Whether the framework shards this ZeRO stage over part of dp with replicas (Layout::dp_shard).
bool hybrid_sharding_allows(Framework framework, int zero);
// DeepSpeed's pipeline engine reduces gradients in its own instruction after the last backward
// (pipe/engine.py _exec_reduce_grads; the engine's backward all-reduce is off under it): with data
// parallelism a DeepSpeed pipeline has no overlap to choose.
bool pipeline_allows_dp_overlap(Framework framework, int pp, bool data_parallel, DpOverlap overlap);
// The DP overlap a layout gets when none is given: bucketed, or none where the framework has no
// other (DeepSpeed's pipelines).
DpOverlap default_dp_overlap(Framework framework, int pp);
std::string to_string(Schedule s);
std::string to_string(Framework f);
std::string to_string(AttentionKernel k);
std::string to_string(CrossEntropy c);
std::string to_string(Float8Recipe r);  // torchtitan's recipe_name: tensorwise | rowwise | rowwise_with_gw_hp
Dtype parse_dtype(const std::string& s);
Recompute parse_recompute(const std::string& s);
DpOverlap parse_dp_overlap(const std::string& s);
Schedule parse_schedule(const std::string& s);
Framework parse_framework(const std::string& s);
AttentionKernel parse_attention_kernel(const std::string& s);  // flash-attention-1 | flash-attention-2 | te-fused
// The kernel a workload's flash attention runs: its own, or its framework's.
AttentionKernel attention_kernel_of(const Workload& work);
CrossEntropy parse_cross_entropy(const std::string& s);  // megatron | torch | flash-attn | torch-compiled
CrossEntropy cross_entropy_of(const Workload& work);
Float8Recipe parse_float8_recipe(const std::string& s);  // tensorwise | rowwise | rowwise_with_gw_hp
// torchao's rowwise recipes (Float8Recipe::Rowwise, RowwiseWithGwHp) under a torchtitan fp8 run.
bool float8_rowwise(const Workload& work);
// Whether pipeline sends hide behind the next chunk's compute instead of blocking the stage:
// Megatron's interleaved schedule with overlap_p2p_comm.
bool p2p_overlapped(const Workload& work, const Layout& layout);
// DeepSpeed's BF16_Optimizer, which its engine runs for bf16 at ZeRO stage 0 (engine.py
// _do_optimizer_sanity_check: gradients accumulate in fp32 unless ZeRO is on; since PR #1801,
// commit 56c5223, 2022-04-19, "bf16+pipeline parallelism"; at ZeRO stage 1 it takes DeepSpeed's ZeRO
// optimizer unless grad_accum_dtype is fp32, and before #3399 pipelines ran bf16 at stage 0 only,
// see Workload::pipeline_bf16_stage0_only). Like ZeRO-1 it partitions the fp32 weights and Adam
// moments over the data-parallel ranks. Every parameter keeps an fp32 gradient beside its bf16 one (bf16_optimizer.py, fp32_groups_gradients_flat, the
// stage's whole parameters), each micro-batch's bf16 gradients are added into it after that
// micro-batch's backward (update_hp_grads: hp_grad.add_(lp.grad.to(fp32)), a cast and an add per
// parameter tensor), and the data-parallel reduction all-reduces the fp32 gradients
// (_bf16_reduce_grads) before each rank updates its partition and the bf16 weights are gathered.
bool bf16_optimizer_runs(const Workload& work, const Layout& layout);

// Whether FSDP gathers the linear layers' weights in fp8 (Workload::fsdp_float8_all_gather): only
// under torchtitan's fp8 training and where FSDP shards (ZeRO-3 over more than one dp x cp rank);
// elsewhere the flag changes nothing, as in torchtitan, whose Float8Linear casts its weight itself
// when no FSDP all-gather did.
bool fsdp_float8_gathers(const Workload& work, const Layout& layout);
// Whether the flag would change this layout: torchtitan fp8 training with the tensorwise recipe
// that FSDP shards.
bool fsdp_float8_gathers_apply(const Workload& work, const Layout& layout);
// Whether a Megatron fp8 run keeps fp8 primary weights (--fp8-param-gather, which the export writes
// where Megatron allows it: the distributed optimizer or Megatron-FSDP, ZeRO 1-3): its parameter
// all-gathers move the linear weights at 1 byte, and TransformerEngine caches no fp8 copy beside them.
bool megatron_fp8_primary_weights(const Workload& work, const Layout& layout);
// Where Megatron accepts --fp8-param-gather: with the distributed optimizer or Megatron-FSDP
// (ZeRO 1-3; arguments.py refuses it otherwise).
bool megatron_allows_fp8_param_gather(const Layout& layout);
bool parse_adam_moments(const std::string& s);  // "fp32" -> false, "bf16" -> true
Count bytes_per_element(Dtype d);  // matrix-input width: fp8 1, bf16/fp16 2, fp32/tf32 4

// "dp=2 tp=4 pp=2 ..." compact description for tables and messages.
std::string describe(const Layout& layout);
// The data-parallel size that fills `gpus` with the layout's tp x pp x cp: the one rule the CLI
// flags, --compare and the validation rows derive dp by. LayoutError ("dp*tp*pp*cp = gpus") where
// tp x pp x cp does not divide the GPUs.
int dp_for_gpus(const Layout& layout, long long gpus);

}  // namespace sixfold
