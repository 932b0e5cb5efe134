#include "simulator/fit/run_facts.hpp"

#include <cctype>

#include "common/error.hpp"

namespace sixfold {

namespace {

// The codebases a validation row may name (data/validation/README.md), and whose implementation
// the cost model follows for each.
struct Codebase {
  const char* name;
  Framework framework;
  bool selective_is_op_level;
  bool local_batch_semantics;
  const char* why;
  // The flash kernel it runs where that is not its framework's (FrameworkTraits::attention_kernel).
  AttentionKernel attention_kernel = AttentionKernel::Default;
  const char* kernel_source = "";
  // Its loss where it is not its framework's (FrameworkTraits::cross_entropy).
  CrossEntropy cross_entropy = CrossEntropy::Default;
  const char* loss_source = "";
  int train_metric_passes = 0;  // Workload::train_metric_passes
  const char* metrics_source = "";
  bool ep_overlap = false;  // Workload::overlap_moe_ep_comm
  const char* ep_overlap_source = "";
  bool deepep_dispatch = false;  // Workload::deepep_dispatch
  const char* dispatch_source = "";
  // Memory savings the codebase makes by default: Adam's moments in bf16
  // (Workload::bf16_adam_moments), the SwiGLU's input kept in fp8 (fp8_activation_input_store).
  bool bf16_adam_moments = false;
  bool fp8_swiglu_input = false;
  const char* memory_source = "";
};
const Codebase kCodebases[] = {
    {"megatron-lm", Framework::Megatron, false, false, "Megatron-LM / Megatron-Core, NeMo and Megatron-Bridge recipes"},
    {"megatron-deepspeed", Framework::DeepSpeed, false, false,
     "Megatron's model code driven by the DeepSpeed engine (its ZeRO, pipeline engine and gradient reduction)"},
    {"deepspeed", Framework::DeepSpeed, false, false, "the DeepSpeed engine"},
    {"torchtitan", Framework::Torchtitan, true, true,
     "FSDP2/DTensor; activation_checkpoint.mode=selective defaults to op-level (selective_ac_option 'op'); "
     "training.batch_size is the local batch, split into one micro-batch per stage (pipeline_parallel_microbatches unset)"},
    {.name = "llm-foundry",
     .framework = Framework::Torchtitan,
     .selective_is_op_level = false,
     .local_batch_semantics = false,
     .why = "Composer's PyTorch FSDP (FULL_SHARD, one flat buffer per block, fp32 reduce) under autocast: FSDP's "
            "traits; its activation checkpointing is per block",
     .cross_entropy = CrossEntropy::FlashAttnFused,
     .loss_source = "llmfoundry/models/mpt/modeling_mpt.py: loss_fn defaults to 'fused_crossentropy', flash-attn's "
                    "flash_attn.losses.cross_entropy.CrossEntropyLoss",
     .train_metric_passes = 2,
     .metrics_source = "Composer (composer/trainer/trainer.py v0.16.4) updates the training metrics after every "
                       "micro-batch; MPT's are LanguageCrossEntropy and LanguagePerplexity (use_train_metrics "
                       "defaults to true), each a torch.nn.CrossEntropyLoss over the logits"},
    // OPT trained with FSDP (fairscale) over Megatron tensor parallelism and Megatron's
    // vocab-parallel cross-entropy (metaseq/model_parallel): Megatron's traits, per-layer gathers.
    {"metaseq", Framework::Megatron, false, false, "FSDP over Megatron tensor parallelism"},
    {.name = "megascale",
     .framework = Framework::Megatron,
     .selective_is_op_level = false,
     .local_batch_semantics = false,
     .why = "MegaScale is built on Megatron-LM (Jiang et al. 2024, arXiv 2402.15627)",
     .attention_kernel = AttentionKernel::Flash2,
     .kernel_source = "MegaScale section 3.2: 'For the attention part, we adopt FlashAttention-2'"},
    {"meta-internal", Framework::Megatron, false, false, "Megatron-style 4D parallelism (Llama 3 report, section 3.3)"},
    {.name = "deepseek-internal",
     .framework = Framework::Megatron,
     .selective_is_op_level = false,
     .local_batch_semantics = false,
     .why = "HAI-LLM, Megatron-style parallelism (DeepSeek-V3 report, 3.2)",
     .ep_overlap = true,
     .ep_overlap_source = "DeepSeek-V3 report 3.2.1: DualPipe overlaps each chunk pair's computation with its "
                          "all-to-all and pipeline communication, 'both all-to-all and PP communication can be fully "
                          "hidden'",
     .deepep_dispatch = true,
     .dispatch_source = "DeepSeek-V3 report 3.2.2: 'tokens are first transmitted via IB to the GPUs with the same "
                        "in-node index on its target nodes ... and then immediately forwarded via NVLink', each token "
                        "crossing IB once per target node (DeepEP is the release of these kernels)",
     .bf16_adam_moments = true,
     .fp8_swiglu_input = true,
     .memory_source = "DeepSeek-V3 report 3.3.3, Low-Precision Storage and Communication: 'We adopt the BF16 data "
                      "format instead of FP32 to track the first and second moments in the AdamW optimizer'; 'we "
                      "cache the inputs of the SwiGLU operator and recompute its output in the backward pass. These "
                      "activations are also stored in FP8'"},
    // With ZeRO-3 an unnamed codebase is PyTorch FSDP (run_settings): Megatron-LM shards parameters
    // only since 2024-11 (--use-torch-fsdp2, which is PyTorch's FSDP2; its own FSDP since 2025-02).
    {"other", Framework::Megatron, false, false,
     "no codebase stated: Megatron-Core's behaviour, the common reference; with ZeRO-3, PyTorch FSDP's"},
};

enum class Setting {
  FlashAttention,
  DpOverlap,
  ModelFlopsCausalHalved,
  Zero3Synchronous,
  SelectiveRecompute,
  BlockRecompute,
  P2pOverlap,
  CompiledLoss,
  PipelineKeepsOutputs,
  PipelineMicroBatchPerStage,
  PipelineMicroBatchOfOne,
  TpOverlap,
  Bf16Optimizer,
  PipelineBf16Stage0Only,
  Fsdp2
};

// What a codebase did by default in [from, until) (yyyymm; 0 = open). "*" is every codebase.
// min_pp / zero_at_most restrict an entry to layouts where the behaviour applied. Later entries
// win. A row whose date is not stated is read as run today: entries with an end do not apply.
struct DatedDefault {
  const char* codebase;
  int from, until;
  Setting setting;
  bool value;
  int min_pp = 1;
  int zero_at_most = 3;
  const char* source = "";
};
const DatedDefault kDatedDefaults[] = {
    {"*", 0, 0, Setting::FlashAttention, true, 1, 3, "every current framework runs a flash kernel (SDPA, TE, FA2)"},
    {"*", 0, 202206, Setting::FlashAttention, false, 1, 3,
     "FlashAttention was published in 2022-05 (Dao et al., arXiv 2205.14135); earlier runs kept the s x s scores"},
    {"megatron-lm", 0, 202407, Setting::FlashAttention, false, 1, 3,
     "Megatron-LM: --use-flash-attn was opt-in (arguments.py, 2023-01); before it, core attention was QK^T, "
     "fused scale-mask-softmax and PV; Transformer Engine's fused attention is the default from NeMo 24.07 "
     "(data/validation/README.md)"},
    {"megatron-deepspeed", 0, 0, Setting::FlashAttention, false, 1, 3,
     "Megatron-DeepSpeed's GPT runs unfused attention with the fused softmax unless --use-flash-attn is given"},
    {"*", 0, 0, Setting::DpOverlap, true, 1, 3, "DDP/FSDP buckets reduce during the backward"},
    {"megatron-lm", 0, 202309, Setting::DpOverlap, false, 1, 3,
     "Megatron-LM's default --DDP-impl local all-reduced gradients after the backward (arguments.py); "
     "--overlap-grad-reduce came in 2023-09 (data/validation/README.md)"},
    {"megatron-deepspeed", 0, 0, Setting::DpOverlap, false, 2, 3,
     "DeepSpeed's pipeline engine reduces gradients in its own step after the last backward "
     "(deepspeed/runtime/pipe/engine.py, _exec_reduce_grads)"},
    {"deepspeed", 0, 0, Setting::DpOverlap, false, 2, 3, "as megatron-deepspeed: the pipeline engine"},
    {"megatron-deepspeed", 0, 0, Setting::DpOverlap, false, 1, 2,
     "the DeepSpeed engine all-reduces after loss.backward() without ZeRO (engine.backward -> allreduce_gradients), "
     "and ZeRO-1/2's overlap_comm defaults to false (DeepSpeed ZeRO config docs)"},
    {"deepspeed", 0, 0, Setting::DpOverlap, false, 1, 2, "as megatron-deepspeed"},
    {"megatron-lm", 202501, 0, Setting::ModelFlopsCausalHalved, true, 1, 3,
     "Megatron-LM's training.py num_floating_point_operations counts causal attention at half ('seq_length / 2 "
     "# causal mask') since 2025; Megatron-Bridge's tables follow it"},
    {"*", 0, 0, Setting::Bf16Optimizer, true, 1, 3,
     "DeepSpeed runs bf16 at ZeRO stage 0 through its BF16_Optimizer (engine.py _do_optimizer_sanity_check; "
     "pipe/engine.py _exec_backward_pass -> update_hp_grads; bf16_optimizer.py); only DeepSpeed's codebases "
     "read it (bf16_optimizer_runs)"},
    {"deepspeed", 0, 202204, Setting::Bf16Optimizer, false, 1, 3,
     "the BF16_Optimizer, with its fp32 gradient accumulation, came with DeepSpeed PR #1801 (commit 56c5223, "
     "2022-04-19, 'bf16+pipeline parallelism'); before it there was none"},
    {"megatron-deepspeed", 0, 202204, Setting::Bf16Optimizer, false, 1, 3, "as deepspeed"},
    {"deepspeed", 202204, 202305, Setting::PipelineBf16Stage0Only, true, 2, 1,
     "from #1801 until PR #3399 (commit dcb4a7d, 2023-05-02, 'Add ZeRO 1 support to PP for BF16') the pipeline "
     "engine raised NotImplementedError for bf16 at ZeRO stage 1 (pipe/engine.py _exec_reduce_grads): a ZeRO-1 "
     "bf16 pipeline of that time is the BF16_Optimizer's partitioning at stage 0 (BLOOM's tr11: ZERO_STAGE=0)"},
    {"megatron-deepspeed", 202204, 202305, Setting::PipelineBf16Stage0Only, true, 2, 1, "as deepspeed"},
    {"deepspeed", 0, 202107, Setting::Zero3Synchronous, true, 1, 3,
     "DeepSpeed's ZeRO-3 synchronised the GPU before every parameter gather until PR #1188 (2021-06; issue #1069)"},
    {"megatron-deepspeed", 0, 202107, Setting::Zero3Synchronous, true, 1, 3, "as deepspeed"},
    {"*", 0, 0, Setting::SelectiveRecompute, true, 1, 3,
     "Megatron-Core --recompute-granularity selective, torchtitan activation_checkpoint.mode selective"},
    {"*", 0, 202205, Setting::SelectiveRecompute, false, 1, 3,
     "selective activation recompute was published in 2022-05 (Korthikanti et al., arXiv 2205.05198); before it, "
     "Megatron-LM's --checkpoint-activations re-ran whole layers"},
    {"*", 0, 0, Setting::BlockRecompute, true, 1, 3,
     "Megatron-LM --recompute-method block --recompute-num-layers N: full recompute of the first N layers of each "
     "virtual stage only (Megatron codebases; the layout refuses it for others)"},
    {"*", 0, 202205, Setting::BlockRecompute, false, 1, 3,
     "--recompute-method block came with selective recompute (Megatron-LM commit bbab79f, 2022-05); before it, "
     "--checkpoint-activations re-ran every layer"},
    {"deepspeed", 0, 0, Setting::SelectiveRecompute, false, 1, 3,
     "the DeepSpeed engine's activation checkpointing (deepspeed.checkpointing.checkpoint) re-runs the function it "
     "wraps whole: a layer"},
    {"*", 0, 0, Setting::P2pOverlap, true, 1, 3,
     "Megatron-Core's interleaved schedule overlaps pipeline sends with compute (overlap_p2p_comm, the default)"},
    {"megatron-lm", 0, 202311, Setting::P2pOverlap, false, 1, 3,
     "Megatron-LM made overlap_p2p_comm the default on 2023-10-23 (commit 4eeff55); before, "
     "--overlap-p2p-communication was opt-in"},
    {"llm-foundry", 0, 0, Setting::SelectiveRecompute, false, 1, 3,
     "Composer's FSDP activation checkpointing wraps whole blocks (activation_checkpointing: true)"},
    {"*", 0, 0, Setting::CompiledLoss, true, 1, 3,
     "torchtitan compiles the loss with the blocks: components/loss.py build_cross_entropy_loss since commit "
     "bbb1b616e (2025-04-02); job_config.py Compile.components defaults to model and loss"},
    {"other", 0, 0, Setting::CompiledLoss, false, 1, 3,
     "an unnamed PyTorch FSDP codebase compiles its model (torch.compile(model)) and computes the loss outside it, "
     "eager: fms-fsdp's train_utils.py (2024-05) calls CrossEntropyLoss on the compiled model's output"},
    {"torchtitan", 0, 202504, Setting::CompiledLoss, false, 1, 3,
     "before bbb1b616e torchtitan compiled the blocks only: train.py (9dec370, 2024-12) 'TODO: compiling loss "
     "function causes CUDA errors, turning off for now'"},
    {"*", 0, 0, Setting::Fsdp2, true, 1, 3,
     "PyTorch FSDP is FSDP2 (fully_shard), torchtitan's from its first release and PyTorch's recommended FSDP since "
     "2.4; only the torchtitan code path reads it (Workload::fsdp1)"},
    {"other", 0, 202407, Setting::Fsdp2, false, 1, 3,
     "FSDP2 (torch.distributed._composable.fsdp.fully_shard) was first released in PyTorch 2.4 (2024-07-24): an "
     "unnamed FSDP codebase of before it ran FSDP1's FullyShardedDataParallel (fms-fsdp's main_training.py, 2024-02)"},
    {"llm-foundry", 0, 0, Setting::Fsdp2, false, 1, 3,
     "Composer wraps the model in FSDP1's FullyShardedDataParallel (composer/distributed/dist_strategy.py "
     "prepare_fsdp_module); its FSDP2 path is opt-in and came after llm-foundry's benchmark tables"},
    {"megatron-lm", 202311, 0, Setting::TpOverlap, true, 1, 3,
     "Megatron-Core overlaps TP communication with GEMMs through TransformerEngine's userbuffers "
     "(--tp-comm-overlap, Megatron-LM commits e19dcb6 and 116ffdd, 2023-10); off in Megatron-LM's argument "
     "parser, but on in the runs published with the codebase: Megatron-LM's README performance table states "
     "it, and the NeMo / Megatron-Bridge performance recipes set it for every TP > 1 run "
     "(Megatron-Bridge scripts/performance/utils/overrides.py 'tp_comm_overlap = tensor_model_parallel_size > 1'; "
     "recipes/llama/h100/llama3.py and recipes/gpt/h100/gpt3_175b.py tp_comm_overlap=True)"},
    // torchtitan's pipeline micro-batches when pipeline_parallel_microbatches was unset: pp of them
    // (pipelining_utils.py build_pipeline_schedule, 'n_microbatches = pipeline_parallel_degree',
    // commit 9dec370, 2024-12) until the two entries below.
    {"torchtitan", 202501, 202504, Setting::PipelineMicroBatchPerStage, true, 2, 3,
     "torchtitan commit 90567fc98 (2025-01-07, #781): build_pipeline_schedule defaults n_microbatches to "
     "num_total_stages = pipeline_parallel_degree x len(stages)"},
    {"torchtitan", 202504, 0, Setting::PipelineMicroBatchOfOne, true, 2, 3,
     "torchtitan commit 5e2033c75 (2025-04-07, #1073): pipeline_parallel_microbatch_size, default 1, replaces "
     "the micro-batch count: n_microbatches = local batch_size / 1"},
    {"torchtitan", 0, 202511, Setting::PipelineKeepsOutputs, true, 2, 3,
     "torch.distributed.pipelining's last stage kept every micro-batch's output for step() to return until "
     "torchtitan passed return_outputs=False (torchtitan #1922, commit e5ef99aab, 2025-10-22; pytorch #165822)"},
};

// The flash kernel a codebase ran before a date, where it was not the one it runs today. Later
// entries win; a row without a date is read as run today (no entry applies).
struct DatedKernel {
  const char* codebase;  // "*": every codebase
  int until;             // yyyymm, exclusive
  AttentionKernel kernel;
  const char* source;
};
const DatedKernel kDatedKernels[] = {
    {"megatron-lm", 202407, AttentionKernel::Flash2,
     "Megatron-LM's --use-flash-attn called the flash-attn package; TransformerEngine's fused attention is the "
     "default from Megatron-Core 0.8 / NeMo 24.07 (data/validation/README.md)"},
    {"*", 202307, AttentionKernel::Flash1,
     "FlashAttention-2 was released on 2023-07-17 (flash-attn 2.0, Dao-AILab/flash-attention commit 4f285b3); "
     "flash attention before it was FlashAttention 1.x"},
    {"meta-internal", 202410, AttentionKernel::Flash2,
     "Meta's training stack is PyTorch (the Llama 3 report, section 3.3, names PyTorch's "
     "TORCH_NCCL_AVOID_RECORD_STREAMS and its NCCL flight recorder): PyTorch's fused attention was "
     "FlashAttention-2 (SDPA's flash backend since torch 2.2, 2024-01) until torch 2.5 added cuDNN's "
     "(2024-10); FlashAttention-3 came out on 2024-07-11 (arXiv 2407.08608), after Llama 3's pre-training"},
    // The benchmark tables ran attn_impl: triton, a Triton port of FlashAttention (submit_benchmarks.py
    // '--attn_impl' default 'triton' in mosaicml/examples 9fa3ceb9a, 2023-04, and llm-foundry b2a43a147,
    // 2023-10; the pretrain yamls say the same). FlashAttention-2's release charts (flash-attention
    // 4f285b3) put that kernel's A100 forward+backward within ~6% of FlashAttention-1's at head dim 128
    // (causal 50-80 against 55-83 TFLOP/s), so FlashAttention-1's measured speed prices it; no H100
    // measurement of it exists (that chart has no Triton bars): on H100 the price is a prior, and the
    // long-sequence H100 rows of the tables come out 20-33% slow (bench/RESULTS.md). Rows whose sweep
    // installed flash-attn 2 (the 2024-01 large-scale H100 table) say so in their `attention` column.
    {"llm-foundry", 202403, AttentionKernel::Flash1,
     "llm-foundry's benchmark tables ran attn_impl 'triton' (submit_benchmarks.py default, mosaicml/examples "
     "9fa3ceb9a and llm-foundry b2a43a147), priced as FlashAttention-1, within ~6% of it on A100 in the "
     "FlashAttention-2 release charts (no H100 measurement: a prior there); flash-attn 2 became the default "
     "with v0.6.0 (2024-03)"},
};

AttentionKernel dated_kernel(const RunFacts& f, AttentionKernel today) {
  AttentionKernel k = today;
  for (const DatedKernel& d : kDatedKernels) {
    if (std::string(d.codebase) != "*" && f.codebase != d.codebase) continue;
    if (f.date == 0 || f.date >= d.until) continue;
    k = d.kernel;
  }
  return k;
}

bool dated_default(const RunFacts& f, Setting s, int pp, int zero) {
  bool value = false;
  for (const DatedDefault& d : kDatedDefaults) {
    if (d.setting != s) continue;
    if (std::string(d.codebase) != "*" && f.codebase != d.codebase) continue;
    if (pp < d.min_pp || zero > d.zero_at_most) continue;
    if (f.date == 0 ? d.until != 0 : (f.date < d.from || (d.until != 0 && f.date >= d.until))) continue;
    value = d.value;
  }
  return value;
}

std::optional<bool> flag01(const std::string& column, const std::string& v) {
  if (v.empty() || v == "unknown") return std::nullopt;
  if (v == "1") return true;
  if (v == "0") return false;
  throw Error("column '" + column + "': value '" + v + "' is not 0, 1 or empty");
}

}  // namespace

RunFacts parse_run_facts(const std::string& framework, const std::string& framework_date, const std::string& attention,
                         const std::string& dp_overlap, const std::string& tp_overlap,
                         const std::string& compile, const std::string& ep_dispatcher, const std::string& ep_overlap,
                         const std::string& fsdp_float8_all_gather, const std::string& float8_recipe,
                         const std::string& grad_reduce_dtype) {
  RunFacts f;
  f.codebase = framework.empty() || framework == "unknown" ? "other" : framework;
  bool known = false;
  std::string names;
  for (const Codebase& c : kCodebases) {
    known = known || f.codebase == c.name;
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  if (!known) throw Error("column 'framework': value '" + framework + "' is not one of " + names);
  if (!framework_date.empty() && framework_date != "unknown") {
    const std::string& d = framework_date;
    const bool shape = d.size() == 7 && d[4] == '-' &&
                       std::isdigit((unsigned char)d[0]) && std::isdigit((unsigned char)d[1]) &&
                       std::isdigit((unsigned char)d[2]) && std::isdigit((unsigned char)d[3]) &&
                       std::isdigit((unsigned char)d[5]) && std::isdigit((unsigned char)d[6]);
    const int month = shape ? std::stoi(d.substr(5, 2)) : 0;
    if (!shape || month < 1 || month > 12)
      throw Error("column 'framework_date': value '" + d + "' is not YYYY-MM");
    f.date = std::stoi(d.substr(0, 4)) * 100 + month;
  }
  if (attention == "flash") f.flash_attention = true;
  else if (attention == "fused-softmax") f.flash_attention = false, f.fused_softmax = true;
  else if (attention == "unfused") f.flash_attention = false, f.fused_softmax = false;
  else if (attention == "flash-attention-1" || attention == "flash-attention-2" || attention == "te-fused")
    f.flash_attention = true, f.attention_kernel = parse_attention_kernel(attention);
  else if (!attention.empty() && attention != "unknown")
    throw Error("column 'attention': value '" + attention +
                "' is not flash, flash-attention-1, flash-attention-2, te-fused, fused-softmax, unfused or empty");
  f.dp_overlap = flag01("dp_overlap", dp_overlap);
  f.tp_overlap = flag01("tp_overlap", tp_overlap);
  f.compile = flag01("compile", compile);
  if (ep_dispatcher == "deepep" || ep_dispatcher == "hybridep") f.deepep_dispatch = true;
  else if (ep_dispatcher == "alltoall") f.deepep_dispatch = false;
  else if (!ep_dispatcher.empty() && ep_dispatcher != "unknown")
    throw Error("column 'ep_dispatcher': value '" + ep_dispatcher + "' is not alltoall, deepep, hybridep or empty");
  f.ep_overlap = flag01("ep_overlap", ep_overlap);
  f.fsdp_float8_all_gather = flag01("fsdp_float8_all_gather", fsdp_float8_all_gather);
  // The PyTorch-only columns (torch.compile, torchao's float8 training and its FSDP2 float8
  // all-gather) are torchtitan's, and PyTorch FSDP's under framework 'other' (zero 3; the validator
  // checks the row's zero).
  const bool pytorch_columns = f.codebase == "torchtitan" || f.codebase == "other";
  if (f.fsdp_float8_all_gather.value_or(false) && !pytorch_columns)
    throw Error("column 'fsdp_float8_all_gather': value '1' with framework '" + f.codebase +
                "': it is torchao's FSDP float8 all-gather (torchtitan's enable_fsdp_float8_all_gather), priced for "
                "torchtitan and for PyTorch FSDP under framework 'other' with zero 3 (0 or empty for other codebases)");
  if (!float8_recipe.empty() && float8_recipe != "unknown") {
    try {
      f.float8_recipe = parse_float8_recipe(float8_recipe);
    } catch (const UsageError&) {
      throw Error("column 'float8_recipe': value '" + float8_recipe +
                  "' is not tensorwise, rowwise, rowwise_with_gw_hp or empty");
    }
    if (!pytorch_columns)
      throw Error("column 'float8_recipe': value '" + float8_recipe + "' with framework '" + f.codebase +
                  "': it is torchao's float8 recipe (torchtitan's recipe_name), priced for torchtitan and for PyTorch "
                  "FSDP under framework 'other' with zero 3 (empty for other codebases)");
  }
  if (grad_reduce_dtype == "bf16") f.grad_reduce_in_bf16 = true;
  else if (grad_reduce_dtype == "fp32") f.grad_reduce_in_bf16 = false;
  else if (!grad_reduce_dtype.empty() && grad_reduce_dtype != "unknown")
    throw Error("column 'grad_reduce_dtype': value '" + grad_reduce_dtype + "' is not fp32, bf16 or empty");
  if (f.grad_reduce_in_bf16.value_or(false) && f.codebase != "megatron-lm" && f.codebase != "torchtitan" &&
      f.codebase != "llm-foundry" && f.codebase != "other")
    throw Error("column 'grad_reduce_dtype': value 'bf16' with framework '" + f.codebase +
                "': it is Megatron-LM's --grad-reduce-in-bf16, or FSDP's bf16 reduce dtype under torchtitan, "
                "llm-foundry (Composer) or framework other (fp32 or empty for other codebases)");
  if (f.compile.value_or(false) && !pytorch_columns)
    throw Error("column 'compile': value '1' with framework '" + f.codebase +
                "': torch.compile is modelled as torchtitan's training.compile, and PyTorch FSDP's under framework "
                "'other' with zero 3 (0 or empty for other codebases)");
  return f;
}

bool priced_as_pytorch_fsdp(const RunFacts& f, int zero) { return f.codebase == "other" && zero == 3; }

RunSettings run_settings(const RunFacts& f, int pp, int zero) {
  RunSettings s;
  AttentionKernel today = AttentionKernel::Default;
  for (const Codebase& c : kCodebases) {
    if (f.codebase != c.name) continue;
    s.framework = c.framework;
    s.selective_is_op_level = c.selective_is_op_level;
    s.local_batch_semantics = c.local_batch_semantics;
    today = c.attention_kernel;
    s.cross_entropy = c.cross_entropy;
    s.train_metric_passes = c.train_metric_passes;
    s.overlap_moe_ep_comm = c.ep_overlap;
    s.deepep_dispatch = c.deepep_dispatch;
    s.bf16_adam_moments = c.bf16_adam_moments;
    s.fp8_swiglu_input = c.fp8_swiglu_input;
  }
  // Parameter sharding in a codebase the row does not name is PyTorch FSDP, the implementation of
  // ZeRO-3 that FSDP codebases share (fms-fsdp, OLMo, Composer, Accelerate): FSDP's traits, eager
  // (torch.compile off, PyTorch's default) unless the `compile` column says otherwise. Megatron-LM
  // had no parameter sharding before 2024-11 (e1993fa6f7, --use-torch-fsdp2: PyTorch's FSDP2).
  s.pytorch_fsdp = priced_as_pytorch_fsdp(f, zero);
  if (s.pytorch_fsdp) s.framework = Framework::Torchtitan;
  s.fsdp1 = s.framework == Framework::Torchtitan && !dated_default(f, Setting::Fsdp2, pp, zero);
  if (today == AttentionKernel::Default) today = framework_traits(s.framework).attention_kernel;
  // A kernel the row names is what ran; otherwise the codebase's at its date.
  s.attention_kernel = f.attention_kernel.value_or(dated_kernel(f, today));
  if (s.framework == Framework::DeepSpeed && dated_default(f, Setting::Zero3Synchronous, pp, zero))
    s.framework = Framework::DeepSpeedLegacy;
  s.flash_attention = f.flash_attention.value_or(dated_default(f, Setting::FlashAttention, pp, zero));
  s.filled_flash = !f.flash_attention.has_value();
  s.dp_overlap = f.dp_overlap.value_or(dated_default(f, Setting::DpOverlap, pp, zero));
  s.filled_dp_overlap = !f.dp_overlap.has_value();
  s.tp_overlap = f.tp_overlap.value_or(dated_default(f, Setting::TpOverlap, pp, zero));
  s.filled_tp_overlap = !f.tp_overlap.has_value();
  s.model_flops_causal_halved = dated_default(f, Setting::ModelFlopsCausalHalved, pp, zero);
  s.has_selective_recompute = dated_default(f, Setting::SelectiveRecompute, pp, zero);
  s.has_block_recompute = s.framework == Framework::Megatron && dated_default(f, Setting::BlockRecompute, pp, zero);
  // torchtitan's activation_checkpoint.selective_ac_option takes an int (every k-th block) as well
  // as "op" in every version its rows come from (parallelize_llama.py); Composer (llm-foundry) has
  // no such option.
  s.has_every_recompute = f.codebase == "torchtitan";
  s.overlap_p2p_comm = dated_default(f, Setting::P2pOverlap, pp, zero);
  s.bf16_optimizer = dated_default(f, Setting::Bf16Optimizer, pp, zero);
  s.pipeline_bf16_stage0_only = dated_default(f, Setting::PipelineBf16Stage0Only, pp, zero);
  s.pp_keeps_stage_outputs = dated_default(f, Setting::PipelineKeepsOutputs, pp, zero);
  using PMB = RunSettings::PipelineMicroBatches;
  s.pipeline_micro_batches = dated_default(f, Setting::PipelineMicroBatchOfOne, pp, zero)      ? PMB::PerSequence
                             : dated_default(f, Setting::PipelineMicroBatchPerStage, pp, zero) ? PMB::PerStage
                                                                                                : PMB::PerPipelineRank;
  // Unstated: off, torchtitan's default (training.compile = false); the validator also tries it
  // on and keeps the faster (row_fill.cpp), as for every unstated choice.
  s.compile = f.compile.value_or(false);
  // Unstated: off, torchtitan's default (enable_fsdp_float8_all_gather = false in its JobConfig).
  s.fsdp_float8_all_gather = f.fsdp_float8_all_gather.value_or(false);
  // Unstated: fp32, Megatron's gradient buffer for bf16 and fp8 training.
  s.grad_reduce_in_bf16 = f.grad_reduce_in_bf16.value_or(false);
  s.filled_fsdp_float8_all_gather = !f.fsdp_float8_all_gather.has_value() && f.codebase == "torchtitan";
  s.tp_always_sequence_parallel = f.codebase == "torchtitan";
  // Unstated: tensorwise, what torchtitan's float8 converter runs without a recipe_name.
  s.float8_recipe = f.float8_recipe.value_or(Float8Recipe::Tensorwise);
  s.filled_float8_recipe = !f.float8_recipe.has_value() && f.codebase == "torchtitan";
  // Unstated MoE dispatch and its overlap: the codebase's (Megatron's defaults: the all-to-all
  // dispatcher on the critical path).
  s.filled_ep_dispatcher = !f.deepep_dispatch.has_value();
  s.filled_ep_overlap = !f.ep_overlap.has_value();
  s.deepep_dispatch = f.deepep_dispatch.value_or(s.deepep_dispatch);
  s.overlap_moe_ep_comm = f.ep_overlap.value_or(s.overlap_moe_ep_comm);
  s.filled_compile = !f.compile.has_value() && f.codebase == "torchtitan";
  s.compiled_cross_entropy = s.cross_entropy;
  if (s.cross_entropy == CrossEntropy::Default && !dated_default(f, Setting::CompiledLoss, pp, zero))
    s.compiled_cross_entropy = CrossEntropy::TorchFp32;  // compiled blocks, eager loss
  if (s.compile) s.cross_entropy = s.compiled_cross_entropy;
  return s;
}

}  // namespace sixfold
