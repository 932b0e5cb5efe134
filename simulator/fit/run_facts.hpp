#pragma once
// The facts of a measured run that are not its layout: which codebase ran it and when, its
// attention kernel and whether DP and TP communication overlapped. They come from a validation
// row's columns (framework, framework_date, attention, dp_overlap, tp_overlap, and this project's
// compile; data/validation/README.md); where a column is empty, from what the named codebase did
// by default at its date (the one table of such facts, run_facts.cpp, each entry with its source).
// Nothing here reads free text.
#include <optional>
#include <string>

#include "models/layout.hpp"

namespace sixfold {

struct RunFacts {
  std::string codebase;  // the `framework` column: megatron-lm, megatron-deepspeed, torchtitan, ...
  int date = 0;          // framework_date as yyyymm (202104); 0 when not stated
  // As stated by the row; nullopt where its cell is empty.
  std::optional<bool> flash_attention;
  // The flash kernel where the row names one (`attention` = flash-attention-1, flash-attention-2 or
  // te-fused, this project's finer values); nullopt: the codebase's kernel at its date.
  std::optional<AttentionKernel> attention_kernel;
  std::optional<bool> fused_softmax;  // attention without flash: Megatron's fused scale-mask-softmax or not
  std::optional<bool> dp_overlap;
  std::optional<bool> tp_overlap;
  std::optional<bool> compile;  // torchtitan's training.compile (the project's `compile` column)
  // The project's `ep_dispatcher` column: a node-deduplicating dispatcher (deepep, hybridep) or
  // the all-to-all (alltoall); and `ep_overlap` (Megatron's --overlap-moe-expert-parallel-comm).
  std::optional<bool> deepep_dispatch;
  std::optional<bool> ep_overlap;
  // The project's `fsdp_float8_all_gather` column: torchtitan's enable_fsdp_float8_all_gather
  // (Workload::fsdp_float8_all_gather); unstated: off, its default.
  std::optional<bool> fsdp_float8_all_gather;
  // The project's `float8_recipe` column: torchtitan's float8 recipe_name (Workload::float8_recipe);
  // unstated: tensorwise, what torchtitan runs without one.
  std::optional<Float8Recipe> float8_recipe;
  // The project's `grad_reduce_dtype` column: bf16 where a Megatron run kept and reduced its
  // gradient buffer in bf16 (Workload::grad_reduce_in_bf16); unstated: fp32, Megatron's default.
  std::optional<bool> grad_reduce_in_bf16;
};

// Parses the columns' cells; throws Error naming the column, value and what is allowed.
RunFacts parse_run_facts(const std::string& framework, const std::string& framework_date, const std::string& attention,
                         const std::string& dp_overlap, const std::string& tp_overlap,
                         const std::string& compile = "", const std::string& ep_dispatcher = "",
                         const std::string& ep_overlap = "", const std::string& fsdp_float8_all_gather = "",
                         const std::string& float8_recipe = "", const std::string& grad_reduce_dtype = "");

// What the cost model runs for a row: the framework whose traits it follows, and the settings a
// row left unstated filled with the codebase's default at its date.
struct RunSettings {
  Framework framework = Framework::Megatron;
  bool flash_attention = true;
  // The flash-attention kernel of the codebase at its date (Default: its framework's today).
  AttentionKernel attention_kernel = AttentionKernel::Default;
  CrossEntropy cross_entropy = CrossEntropy::Default;  // the codebase's loss (Default: its framework's)
  int train_metric_passes = 0;                         // Workload::train_metric_passes
  bool overlap_moe_ep_comm = false;                    // Workload::overlap_moe_ep_comm
  bool deepep_dispatch = false;                        // Workload::deepep_dispatch
  bool bf16_adam_moments = false;                      // Workload::bf16_adam_moments
  bool grad_reduce_in_bf16 = false;                    // Workload::grad_reduce_in_bf16
  bool fp8_swiglu_input = false;                       // Workload::fp8_activation_input_store (fp8 runs)
  bool dp_overlap = true;
  bool tp_overlap = false;
  bool compile = false;  // Workload::compile; with the loss too when the codebase compiled it at its date
  bool fsdp_float8_all_gather = false;  // Workload::fsdp_float8_all_gather
  bool filled_fsdp_float8_all_gather = false;  // unstated, so off
  Float8Recipe float8_recipe = Float8Recipe::Tensorwise;  // Workload::float8_recipe
  // The codebase's tensor parallelism always shards the sequence (torchtitan's TP plan runs its
  // norms as SequenceParallel; it has no TP without): a row's tp > 1 runs with sp.
  bool tp_always_sequence_parallel = false;
  bool filled_float8_recipe = false;                      // unstated, so tensorwise
  // The loss the codebase runs compiled at its date: what an unstated `compile` tried on prices.
  CrossEntropy compiled_cross_entropy = CrossEntropy::Default;
  // Megatron-LM since 2025 (and Megatron-Bridge) counts causal attention at half in its model
  // TFLOP/s; older Megatron-LM, NeMo 1 and the papers count it whole.
  bool model_flops_causal_halved = false;
  // "selective" recompute means op-level selective checkpointing (torchtitan's default "op").
  bool selective_is_op_level = false;
  // Whether the codebase had a selective recompute at its date; without one an unstated policy is
  // none or full (whole-layer checkpointing).
  bool has_selective_recompute = true;
  // Megatron's block recompute (--recompute-method block): full recompute of some layers only.
  bool has_block_recompute = true;
  // torchtitan's every k-th layer checkpointing (selective_ac_option k).
  bool has_every_recompute = false;
  // Pipeline sends overlap compute under Megatron's interleaved schedule (Workload::overlap_p2p_comm).
  bool overlap_p2p_comm = true;
  // DeepSpeed's BF16_Optimizer existed at the row's date (Workload::bf16_optimizer).
  bool bf16_optimizer = true;
  bool pipeline_bf16_stage0_only = false;  // Workload::pipeline_bf16_stage0_only
  // The pipeline's last stage keeps every micro-batch's output (Workload::pp_keeps_stage_outputs).
  bool pp_keeps_stage_outputs = false;
  // The global batch is dp x the stated local batch, and a pipeline splits that local batch into
  // micro-batches by `pipeline_micro_batches` (torchtitan's defaults).
  bool local_batch_semantics = false;
  // How many micro-batches torchtitan's pipeline makes of a rank's local batch when not told, by
  // date (run_facts.cpp): pp of them, then one per stage in all (pp x stages per rank), then
  // micro-batches of one sequence.
  enum class PipelineMicroBatches { PerPipelineRank, PerStage, PerSequence };
  PipelineMicroBatches pipeline_micro_batches = PipelineMicroBatches::PerPipelineRank;
  // Which settings came from the table rather than the row (for the validator's "filled" counts).
  bool filled_flash = false, filled_dp_overlap = false, filled_tp_overlap = false, filled_compile = false;
  bool pytorch_fsdp = false;  // priced_as_pytorch_fsdp: FSDP's code path for a codebase the row does not name
  bool fsdp1 = false;         // Workload::fsdp1: the codebase's PyTorch FSDP is FSDP1 at its date (Setting::Fsdp2)
  bool filled_ep_dispatcher = false, filled_ep_overlap = false;
};

// A row of no named codebase (`other`, empty or unknown) that shards parameters (ZeRO-3) is priced
// as PyTorch FSDP (run_facts.cpp); the one place that rule is written.
bool priced_as_pytorch_fsdp(const RunFacts& facts, int zero);

// `pp` and `zero` matter for what a codebase did (Megatron's local DDP with pipelines, DeepSpeed's
// pipeline engine). Throws Error for a codebase the table does not know.
RunSettings run_settings(const RunFacts& facts, int pp, int zero);

}  // namespace sixfold
