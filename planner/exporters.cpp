#include "planner/exporters.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <map>
#include <cmath>
#include <sstream>

#include "common/error.hpp"
#include "planner/plan_file.hpp"
#include "simulator/memory_model.hpp"

namespace sixfold {

namespace {

[[noreturn]] void refuse(const char* framework, const std::string& why) {
  throw UsageError(std::string(framework) + " export: cannot express this layout: " + why);
}

}  // namespace

ExportFormat parse_export_format(const std::string& n) {
  if (n == "yaml") return ExportFormat::Yaml;
  if (n == "megatron") return ExportFormat::Megatron;
  if (n == "deepspeed") return ExportFormat::DeepSpeed;
  if (n == "torchtitan") return ExportFormat::Torchtitan;
  throw UsageError("unknown export format '" + n + "' (allowed: yaml, megatron, deepspeed, torchtitan)");
}

std::string to_string(ExportFormat f) {
  switch (f) {
    case ExportFormat::Yaml: return "yaml";
    case ExportFormat::Megatron: return "megatron";
    case ExportFormat::DeepSpeed: return "deepspeed";
    case ExportFormat::Torchtitan: return "torchtitan";
  }
  return "?";
}

// Megatron's --moe-layer-freq as a Python list expression: runs of dense (0) and MoE (1) layers,
// e.g. "[0]*3+[1]*58" for DeepSeek-V3.
std::string moe_layer_pattern(const ModelSpec& m) {
  std::string out;
  int run = 0;
  for (int i = 0; i < m.layers; ++i) {
    ++run;
    if (i + 1 == m.layers || m.is_moe_layer(i + 1) != m.is_moe_layer(i)) {
      if (!out.empty()) out += '+';
      out += m.is_moe_layer(i) ? "[1]*" : "[0]*";
      out += std::to_string(run);
      run = 0;
    }
  }
  return out;
}

// Flag names as megatron/training/arguments.py defines them (Megatron-LM v0.15.3;
// configs/framework_keys/megatron-lm.txt).
std::string export_megatron(const Scenario& s) {
  const Layout& l = s.layout;
  const ModelSpec& m = s.model;
  if (l.schedule == Schedule::GPipe) refuse("Megatron-LM", "GPipe schedule (Megatron runs 1F1B or interleaved 1F1B)");
  if (s.work.compile) refuse("Megatron-LM", "torch.compile of the blocks (torchtitan's compile.enable; Megatron runs its own fused kernels)");
  if (s.work.fsdp_float8_all_gather)
    refuse("Megatron-LM", "torchao's FSDP float8 all-gather (torchtitan's enable_fsdp_float8_all_gather; Megatron's "
                          "--fp8-param-gather, which the export writes for fp8 with the distributed optimizer, is its "
                          "own)");
  if (s.work.float8_recipe != Float8Recipe::Tensorwise)
    refuse("Megatron-LM", "torchao's " + to_string(s.work.float8_recipe) +
                              " float8 recipe (torchtitan's recipe_name; Megatron's fp8 is TransformerEngine's)");
  if (l.schedule == Schedule::ZeroBubble) refuse("Megatron-LM", "zero-bubble schedule (not in Megatron-LM's schedules.py)");
  if (l.dp_overlap == DpOverlap::PerLayer)
    refuse("Megatron-LM", "per-layer gradient all-reduce (Megatron reduces in buckets: use dp_overlap bucketed)");
  if (m.parallel_residual)
    refuse("Megatron-LM", "GPT-NeoX's parallel residual (attention and MLP on the same input) is not a Megatron-LM option");
  std::ostringstream o;
  auto flag = [&](const std::string& name, const std::string& value = "") {
    o << "  " << name;
    if (!value.empty()) o << " " << value;
    o << " \\\n";
  };
  const auto n = [](auto v) { return std::to_string(v); };
  o << "# Megatron-LM flags for " << m.name << " on " << s.gpus << " GPUs (sixfold plan); vocabulary " << m.vocab
    << " from your tokenizer\n";
  for (const std::string& note : export_notes(ExportFormat::Megatron, s)) o << "# " << note << "\n";
  flag("--num-layers", n(m.layers));
  flag("--hidden-size", n(m.hidden));
  flag("--ffn-hidden-size", n(m.ffn));
  flag("--num-attention-heads", n(m.heads));
  if (m.mla.enabled) {
    flag("--multi-latent-attention");
    if (m.mla.q_lora_rank > 0) flag("--q-lora-rank", n(m.mla.q_lora_rank));
    flag("--kv-lora-rank", n(m.mla.kv_lora_rank));
    flag("--qk-head-dim", n(m.mla.qk_nope_head_dim));
    flag("--qk-pos-emb-head-dim", n(m.mla.qk_rope_head_dim));
    flag("--v-head-dim", n(m.mla.v_head_dim));
  } else {
    if (m.kv_heads != m.heads) {
      flag("--group-query-attention");
      flag("--num-query-groups", n(m.kv_heads));
    }
    if (m.head_dim > 0 && Count(m.head_dim) * m.heads != m.hidden) flag("--kv-channels", n(m.head_dim));
  }
  if (m.qk_norm) flag("--qk-layernorm");
  // Megatron's linears have biases and its layers dropout 0.1 unless told otherwise.
  if (!m.linear_bias) {
    flag("--disable-bias-linear");
    if (m.qkv_bias) flag("--add-qkv-bias");
  }
  if (!m.dropout) {
    flag("--attention-dropout", "0");
    flag("--hidden-dropout", "0");
  }
  flag("--seq-length", n(s.work.seq));
  flag("--max-position-embeddings", n(std::max<Count>(s.work.seq, m.max_seq)));
  if (m.norm == NormKind::RMSNorm) flag("--normalization", "RMSNorm");
  {
    std::ostringstream eps;
    eps << m.norm_eps;
    flag("--norm-epsilon", eps.str());
  }
  if (m.activation == Activation::SwiGLU) flag("--swiglu");
  if (m.activation == Activation::SquaredReLU) flag("--squared-relu");
  if (m.rotary_fraction > 0 && !m.learned_positions) {
    flag("--position-embedding-type", "rope");
    // MLA ropes only its qk-pos-emb part, which --qk-pos-emb-head-dim already says.
    if (m.rotary_fraction < 1 && !m.mla.enabled) flag("--rotary-percent", std::to_string(m.rotary_fraction).substr(0, 4));
    // Megatron's --rotary-base is an integer (arguments.py, type=int).
    flag("--rotary-base", n(Count(std::llround(m.rope_theta))));
    if (m.rope_scaling_factor > 0) {
      flag("--use-rope-scaling");
      std::ostringstream f;
      f << m.rope_scaling_factor;
      flag("--rope-scaling-factor", f.str());
    }
  }
  if (!m.tied_embeddings) flag("--untie-embeddings-and-output-weights");
  if (m.moe.enabled()) {
    flag("--num-experts", n(m.moe.num_experts));
    flag("--moe-router-topk", n(m.moe.top_k));
    flag("--moe-ffn-hidden-size", n(m.moe.expert_ffn));
    if (m.moe.first_k_dense > 0 || m.moe.layer_frequency > 1) flag("--moe-layer-freq", std::string("'") + moe_layer_pattern(m) + "'");
    if (m.moe.shared_experts > 0)
      flag("--moe-shared-expert-intermediate-size",
           n(Count(m.moe.shared_experts) * (m.moe.shared_expert_ffn > 0 ? m.moe.shared_expert_ffn : m.moe.expert_ffn)));
    if (m.moe.router_bias) {
      flag("--moe-router-score-function", "sigmoid");
      flag("--moe-router-enable-expert-bias");
    }
    if (m.moe.capacity_factor > 0) flag("--moe-expert-capacity-factor", std::to_string(m.moe.capacity_factor).substr(0, 4));
    // sixfold prices batched expert GEMMs and an all-to-all dispatch, or DeepEP's.
    flag("--moe-grouped-gemm");
    flag("--moe-token-dispatcher-type", s.work.deepep_dispatch ? "flex" : "alltoall");
    if (s.work.deepep_dispatch) flag("--moe-enable-deepep");
  }
  flag("--tensor-model-parallel-size", n(l.tp));
  flag("--pipeline-model-parallel-size", n(l.pp));
  if (l.embedding_in_pipeline_split) flag("--account-for-embedding-in-pipeline-split");
  if (l.loss_in_pipeline_split) flag("--account-for-loss-in-pipeline-split");
  if (!l.pipeline_layout.empty()) {
    // Megatron derives the virtual stages per rank from the layout (its stage count over pp).
    flag("--pipeline-model-parallel-layout", "'" + l.pipeline_layout + "'");
  } else if (l.schedule == Schedule::Interleaved) {
    // With the embedding/loss in the split, Megatron derives each virtual stage's layers itself.
    if (l.accounts_pipeline_split()) {
      flag("--num-virtual-stages-per-pipeline-rank", n(l.vpp));
    } else {
      const auto counts = stage_layer_counts(m, l);
      flag("--num-layers-per-virtual-pipeline-stage", n(counts.back() / l.vpp));
    }
  }
  if (l.first_stage_layers > 0) flag("--decoder-first-pipeline-num-layers", n(l.first_stage_layers));
  if (l.last_stage_layers > 0) flag("--decoder-last-pipeline-num-layers", n(l.last_stage_layers));
  flag("--context-parallel-size", n(l.cp));
  if (m.moe.enabled()) {
    flag("--expert-model-parallel-size", n(l.ep));
    flag("--expert-tensor-parallel-size", n(l.etp));
  }
  if (l.sp) flag("--sequence-parallel");
  if (l.tp_overlap) flag("--tp-comm-overlap");
  if (l.zero == 1) {
    flag("--use-distributed-optimizer");
    // Hybrid sharding: the optimizer state sharded over dp_shard ranks, replicated dp / dp_shard times.
    if (l.shard_replicas() > 1) flag("--num-distributed-optimizer-instances", n(l.shard_replicas()));
    if (l.dp_overlap == DpOverlap::Bucketed) flag("--overlap-param-gather");
  }
  if (l.zero >= 2) {
    // ZeRO-2/3 are Megatron-FSDP's sharding strategies (its user guide's required flags); the
    // distributed optimizer alone keeps the full gradient buffer.
    flag("--use-megatron-fsdp");
    flag("--data-parallel-sharding-strategy", l.zero == 2 ? "optim_grads" : "optim_grads_params");
    flag("--no-gradient-accumulation-fusion");
    flag("--use-distributed-optimizer");
    flag("--ckpt-format", "fsdp_dtensor");
    if (l.dp_overlap == DpOverlap::Bucketed) flag("--overlap-param-gather");
  }
  if (l.dp_overlap == DpOverlap::Bucketed) {
    flag("--overlap-grad-reduce");
    if (l.bucket_bytes > 0)  // otherwise Megatron's own default, which sixfold prices
      flag("--ddp-bucket-size", n(static_cast<long long>(l.bucket_bytes / state_bytes(s.work).gradient)));
  }
  if (l.recompute == Recompute::SelectiveOp)
    refuse("Megatron-LM", "op-level selective checkpointing (Megatron recomputes core attention, a whole layer or none)");
  if (l.recompute == Recompute::Selective) {
    flag("--recompute-granularity", "selective");
    if (l.recompute_modules != 0) {
      std::string mods = recompute_modules_string(l.recompute_modules);
      std::replace(mods.begin(), mods.end(), ',', ' ');
      flag("--recompute-modules", mods);
    }
  }
  if (l.recompute_every > 0)
    refuse("Megatron-LM", "every k-th layer recompute (torchtitan's; Megatron recomputes the first N layers of each "
                          "stage: --recompute-num-layers)");
  if (l.recompute == Recompute::Full) {
    flag("--recompute-granularity", "full");
    flag("--recompute-method", l.block_recompute() ? "block" : "uniform");
    flag("--recompute-num-layers", l.block_recompute() ? n(l.recompute_num_layers) : "1");
  }
  // Megatron-Core picks its attention with --attention-backend (--use-flash-attn reaches only the
  // legacy model, megatron/legacy/model/transformer.py at v0.15.3): TransformerEngine's fused
  // (cuDNN) attention or flash-attn, as priced; unfused without flash attention.
  if (!s.work.flash_attention) flag("--attention-backend", "unfused");
  else flag("--attention-backend", attention_kernel_of(s.work) == AttentionKernel::TeFused ? "fused" : "flash");
  if (s.work.mtp_layers > 0) flag("--mtp-num-layers", n(s.work.mtp_layers));
  if (!s.work.overlap_p2p_comm && l.vpp > 1) flag("--no-overlap-p2p-communication");
  if (s.work.overlap_moe_ep_comm && l.ep > 1) flag("--overlap-moe-expert-parallel-comm");
  if (s.work.bf16_adam_moments) {
    flag("--use-precision-aware-optimizer");
    flag("--exp-avg-dtype", "bf16");
    flag("--exp-avg-sq-dtype", "bf16");
  }
  if (s.work.grad_reduce_in_bf16) flag("--grad-reduce-in-bf16");
  flag("--micro-batch-size", n(l.micro_batch));
  flag("--global-batch-size", n(s.work.global_batch));
  switch (s.work.dtype) {
    case Dtype::BF16: flag("--bf16"); break;
    case Dtype::FP16: flag("--fp16"); break;
    case Dtype::FP8:
      flag("--bf16");
      flag("--fp8-format", "hybrid");
      // fp8 primary weights where Megatron allows them (distributed optimizer, Megatron-FSDP): what
      // the memory model prices, rather than bf16 weights plus TransformerEngine's cached fp8 copy
      // (simulator/framework_memory.cpp, megatron_fp8_primary_weights) and its 1-byte gathers.
      if (megatron_allows_fp8_param_gather(l)) flag("--fp8-param-gather");
      break;
    default: break;
  }
  std::string text = o.str();
  text.erase(text.size() - 3);  // the last line's continuation
  return text + "\n";
}

// Keys as DeepSpeed's config documents them (deepspeed/runtime/config.py, runtime/zero/config.py).
std::string export_deepspeed(const Scenario& s) {
  const Layout& l = s.layout;
  if (l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1)
    refuse("DeepSpeed", "tp/pp/cp/ep > 1 (" + describe(l) +
                            "): this export writes ZeRO data parallelism only; DeepSpeed's pipeline engine and "
                            "Megatron-DeepSpeed's TP need model code changes");
  if (l.dp_overlap == DpOverlap::PerLayer)
    refuse("DeepSpeed", "per-layer gradient reduction (DeepSpeed reduces in buckets of reduce_bucket_size)");
  if (l.recompute == Recompute::Selective || l.recompute == Recompute::SelectiveOp)
    refuse("DeepSpeed", "selective recompute (DeepSpeed's activation checkpointing wraps whole layers)");
  if (l.partial_recompute())
    refuse("DeepSpeed", "full recompute of some layers only (Megatron's block method, torchtitan's every k-th layer)");
  if (s.work.dtype == Dtype::FP8) refuse("DeepSpeed", "fp8 (needs TransformerEngine in the model code)");
  if (s.work.bf16_adam_moments) refuse("DeepSpeed", "bf16 Adam moments (DeepSpeed's Adam keeps them in fp32)");
  if (s.work.grad_reduce_in_bf16) refuse("DeepSpeed", "Megatron's --grad-reduce-in-bf16");
  if (s.work.fp8_activation_input_store) refuse("DeepSpeed", "the SwiGLU's fp8 input store (Megatron-Core's activation_func_fp8_input_store)");
  if (s.work.compile) refuse("DeepSpeed", "torch.compile of the blocks (torchtitan's compile.enable)");
  if (s.work.fsdp_float8_all_gather)
    refuse("DeepSpeed", "torchao's FSDP float8 all-gather (torchtitan's enable_fsdp_float8_all_gather)");
  if (s.work.mtp_layers > 0) refuse("DeepSpeed", "multi-token prediction (Megatron's --mtp-num-layers)");
  nlohmann::ordered_json j;
  j["train_batch_size"] = s.work.global_batch;
  j["train_micro_batch_size_per_gpu"] = l.micro_batch;
  j["gradient_accumulation_steps"] = micro_batches_per_step(l, s.work);
  j["bf16"] = {{"enabled", s.work.dtype == Dtype::BF16}};
  j["fp16"] = {{"enabled", s.work.dtype == Dtype::FP16}};
  nlohmann::ordered_json z;
  z["stage"] = l.zero;
  z["overlap_comm"] = l.dp_overlap == DpOverlap::Bucketed;
  z["contiguous_gradients"] = true;
  // DeepSpeed counts bucket sizes in elements, not bytes.
  const long long elements = static_cast<long long>(gradient_bucket_bytes(l, s.work) / state_bytes(s.work).gradient);
  z["reduce_bucket_size"] = elements;
  z["allgather_bucket_size"] = elements;
  // ZeRO-3's gathers as priced (simulator/framework_memory.hpp): DeepSpeed's defaults, written out
  // so that the run holds what the prediction holds.
  if (l.zero == 3) {
    z["stage3_prefetch_bucket_size"] = static_cast<long long>(kDeepSpeedPrefetchBucket);
    z["stage3_max_live_parameters"] = static_cast<long long>(kDeepSpeedMaxLiveParameters);
    z["stage3_param_persistence_threshold"] = static_cast<long long>(kDeepSpeedPersistenceThreshold);
    // Hybrid sharding is DeepSpeed's MiCS: ZeRO-3 within groups of mics_shard_size ranks,
    // gradients all-reduced across the groups (runtime/zero/mics.py).
    if (l.shard_replicas() > 1) {
      z["mics_shard_size"] = l.shard_dp() * l.cp;
      z["mics_hierarchical_params_gather"] = false;
    }
  }
  j["zero_optimization"] = z;
  if (l.recompute == Recompute::Full)
    j["activation_checkpointing"] = {{"partition_activations", false}, {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}};
  return j.dump(2) + "\n";
}

// Keys as torchtitan's JobConfig defines them (torchtitan/config/job_config.py: Parallelism,
// ActivationCheckpoint, Training).
std::string export_torchtitan(const Scenario& s) {
  const Layout& l = s.layout;
  if (l.zero == 1 || l.zero == 2)
    refuse("torchtitan", "ZeRO-" + std::to_string(l.zero) +
                             ": torchtitan has no ZeRO-1/2 distinction; FSDP2 shards parameters, gradients and "
                             "optimizer state together (ZeRO-3) or replicates (DDP)");
  if (l.zero == 0 && (l.tp > 1 || l.pp > 1 || l.cp > 1) && l.dp > 1)
    refuse("torchtitan", "DDP (ZeRO-0) combined with tp/pp/cp: torchtitan replicates only together with FSDP (HSDP)");
  if (l.schedule == Schedule::ZeroBubble && l.vpp == 1)
    refuse("torchtitan", "zero-bubble with one stage per rank (ZB-H1); torchtitan's zero-bubble schedules are interleaved");
  if (l.dp_overlap == DpOverlap::None && l.dp > 1)
    refuse("torchtitan", "no gradient-reduction overlap (FSDP2 always overlaps)");
  if (l.tp > 1 && !l.sp)
    refuse("torchtitan", "tensor parallelism without sequence parallelism (torchtitan's TP plan always runs the "
                         "norms as SequenceParallel: turn sp on)");
  if (s.model.moe.enabled() && l.etp != 1 && l.etp != l.tp)
    refuse("torchtitan", "expert tensor parallel size other than 1 or tp");
  if (s.work.bf16_adam_moments) refuse("torchtitan", "bf16 Adam moments (torch.optim.AdamW keeps them in the parameters' fp32)");
  if (s.work.fp8_activation_input_store) refuse("torchtitan", "the SwiGLU's fp8 input store (Megatron-Core's activation_func_fp8_input_store)");
  if (s.work.mtp_layers > 0) refuse("torchtitan", "multi-token prediction (Megatron's --mtp-num-layers)");
  if (s.work.deepep_dispatch)
    refuse("torchtitan", "Megatron's DeepEP dispatcher (--moe-enable-deepep; torchtitan prices its own all-to-all)");
  if (!l.pipeline_layout.empty())
    refuse("torchtitan", "Megatron's custom pipeline layout (--pipeline-model-parallel-layout; torchtitan splits the "
                         "layers itself or at pipeline_parallel_split_points)");
  std::ostringstream o;
  o << "# torchtitan job config for " << s.model.name << " on " << s.gpus << " GPUs (sixfold plan)\n";
  // torchtitan builds a model from a registered name and flavor (torchtitan/models/*/__init__.py).
  static const std::map<std::string, std::pair<std::string, std::string>> flavors = {
      {"llama3-8b", {"llama3", "8B"}}, {"llama3-70b", {"llama3", "70B"}}, {"llama3.1-405b", {"llama3", "405B"}},
      {"deepseek-v3", {"deepseek_v3", "671B"}}};
  o << "[model]\n";
  if (auto it = flavors.find(s.model.name); it != flavors.end()) {
    o << "name = \"" << it->second.first << "\"\n";
    o << "flavor = \"" << it->second.second << "\"\n";
  } else {
    o << "# no registered torchtitan flavor has this architecture: register one with dim = " << s.model.hidden
      << ", n_layers = " << s.model.layers << ", n_heads = " << s.model.heads << ", n_kv_heads = " << s.model.kv_heads
      << ", vocab_size = " << s.model.vocab << ", rope_theta = " << s.model.rope_theta << ", norm_eps = " << s.model.norm_eps
      << " and name it here\n";
  }
  // FP8 is torchao's Float8Linear, a model converter (docs/float8.md: --model.converters
  // quantize.linear.float8); the output head stays in bf16 as in torchtitan's own configs.
  if (s.work.dtype == Dtype::FP8) o << "converters = [\"quantize.linear.float8\"]\n";
  o << "\n[parallelism]\n";
  // FSDP2 shards over dp_shard and replicates the rest (HSDP); DDP replicates all of dp.
  o << "data_parallel_replicate_degree = " << (l.zero == 3 ? l.shard_replicas() : l.dp) << "\n";
  o << "data_parallel_shard_degree = " << (l.zero == 3 ? l.shard_dp() : 1) << "\n";
  o << "tensor_parallel_degree = " << l.tp << "\n";
  o << "pipeline_parallel_degree = " << l.pp << "\n";
  if (l.pp > 1) {
    const char* sched = l.schedule == Schedule::GPipe         ? "GPipe"
                        : l.schedule == Schedule::Interleaved ? "Interleaved1F1B"
                        : l.schedule == Schedule::ZeroBubble  ? "InterleavedZeroBubble"
                                                              : "1F1B";
    o << "pipeline_parallel_schedule = \"" << sched << "\"\n";
    // torchtitan cuts the local batch into micro-batches of this many sequences (job_config.py,
    // default 1); the local batch below is the whole step's, so one pipeline flush runs all
    // micro-batches, as priced.
    o << "pipeline_parallel_microbatch_size = " << l.micro_batch << "\n";
    // The split priced, part by part: torchtitan's own (generate_llm_fqn_per_model_part, which
    // counts the embedding and the output as a layer each) differs from it, and only the module
    // list expresses an uneven or first/last-stage split. Parts are in stage order, virtual stage c
    // of rank r being part c x pp + r (pipeline_module_split's looped style), as sixfold counts them.
    const std::vector<int> parts = virtual_stage_layer_counts(s.model, l);
    o << "module_fqns_per_model_part = [";
    int layer = 0;
    for (size_t c = 0; c < parts.size(); ++c) {
      std::vector<std::string> names;
      if (c == 0) names.push_back("tok_embeddings");
      for (int i = 0; i < parts[c]; ++i) names.push_back("layers." + std::to_string(layer++));
      if (c + 1 == parts.size()) names.insert(names.end(), {"norm", "output"});
      o << (c == 0 ? "\n  [" : ",\n  [");
      for (size_t i = 0; i < names.size(); ++i) o << (i ? ", \"" : "\"") << names[i] << "\"";
      o << "]";
    }
    o << "\n]\n";
  }
  o << "context_parallel_degree = " << l.cp << "\n";
  if (s.model.moe.enabled()) {
    o << "expert_parallel_degree = " << l.ep << "\n";
    o << "expert_tensor_parallel_degree = " << l.etp << "\n";
  }
  o << "enable_async_tensor_parallel = " << (l.tp_overlap ? "true" : "false") << "\n";
  o << "\n[activation_checkpoint]\n";
  if (l.block_recompute())
    refuse("torchtitan", "Megatron's block recompute of the first layers of each stage (torchtitan checkpoints "
                         "every k-th layer: --recompute-every)");
  if (l.recompute == Recompute::Selective)
    refuse("torchtitan", "Megatron's core-attention recompute (torchtitan's selective modes are op-level or "
                         "every k-th layer: use --recompute selective-op or --recompute-every)");
  const bool selective = l.recompute == Recompute::SelectiveOp || l.recompute_every > 0;
  o << "mode = \"" << (selective ? std::string("selective") : to_string(l.recompute)) << "\"\n";
  if (l.recompute == Recompute::SelectiveOp) o << "selective_ac_option = \"op\"\n";
  if (l.recompute_every > 0) o << "selective_ac_option = \"" << l.recompute_every << "\"\n";
  o << "\n[training]\n";
  o << "seq_len = " << s.work.seq << "\n";
  // local_batch_size is what one rank runs before the optimizer step, or before the next gradient
  // accumulation step where global_batch_size is larger (torchtitan's train.py). Without a
  // pipeline it is the micro-batch; with one, the pipeline takes the whole step's batch of the
  // data-parallel rank, or torchtitan would run a flush per micro-batch, each its own bubble.
  o << "local_batch_size = " << (l.pp > 1 ? s.work.global_batch / l.dp : l.micro_batch) << "\n";
  o << "global_batch_size = " << s.work.global_batch << "\n";
  const char* precision = s.work.dtype == Dtype::FP32 ? "float32" : s.work.dtype == Dtype::FP16 ? "float16" : "bfloat16";
  o << "mixed_precision_param = \"" << precision << "\"\n";
  // FSDP's reduce dtype: torchtitan's default float32, bfloat16 where the plan reduces in bf16.
  if (s.work.grad_reduce_in_bf16) o << "mixed_precision_reduce = \"bfloat16\"\n";
  if (s.work.dtype == Dtype::FP8) {
    // The FSDP gathers as priced: in bf16, or in fp8 with the scales precomputed after the step
    // (Workload::fsdp_float8_all_gather; torchtitan's docs/float8.md pairs the two with tensorwise
    // scaling, its default recipe). A named recipe is written only where it is not tensorwise:
    // torchtitan asserts recipe_name unset when the float8 all-gather is on.
    o << "\n[quantize.linear.float8]\n";
    if (s.work.float8_recipe != Float8Recipe::Tensorwise)
      o << "recipe_name = \"" << to_string(s.work.float8_recipe) << "\"\n";
    o << "enable_fsdp_float8_all_gather = " << (s.work.fsdp_float8_all_gather ? "true" : "false") << "\n";
    if (s.work.fsdp_float8_all_gather) o << "precompute_float8_dynamic_scale_for_fsdp = true\n";
    o << "filter_fqns = [\"output\"]\n";
  }
  // job_config.py's Compile: the blocks and the loss. Async TP runs only on compiled blocks
  // (torchtitan refuses enable_async_tensor_parallel without compile), so it turns compile on;
  // the memory priced for such a plan without --compile is then eager checkpointing's, the larger.
  if (s.work.compile || l.tp_overlap) {
    o << "\n[compile]\n";
    o << "enable = true\n";
    o << "components = [\"model\", \"loss\"]\n";
  }
  return o.str();
}

std::vector<std::string> export_notes(ExportFormat f, const Scenario& s) {
  std::vector<std::string> notes;
  if (f == ExportFormat::Megatron && s.work.fp8_activation_input_store)
    // arguments.py lists activation_func_fp8_input_store among the TransformerConfig fields it
    // builds no flag for; NeMo / Megatron-Bridge recipes set it in the model config.
    notes.push_back("set TransformerConfig.activation_func_fp8_input_store = True in the model provider (the "
                    "SwiGLU's input kept in fp8, as priced); Megatron-LM has no command-line flag for it");
  if (f == ExportFormat::Megatron && s.work.flash_attention && attention_kernel_of(s.work) == AttentionKernel::Flash1)
    notes.push_back("priced with FlashAttention 1.x; --attention-backend flash runs the installed flash-attn, which "
                    "Megatron-LM v0.15 requires to be 2.x or later: expect faster attention than priced");
  if (f == ExportFormat::Torchtitan && s.layout.tp_overlap && !s.work.compile)
    notes.push_back("async TP runs only on compiled blocks: the export turns [compile] on; the memory priced is "
                    "eager checkpointing's, the larger (add --compile to price the compiled run)");
  // torchtitan's own fp8 configs gather in fp8; an export priced without it says how to price it with.
  if (f == ExportFormat::Torchtitan && !s.work.fsdp_float8_all_gather && fsdp_float8_gathers_apply(s.work, s.layout))
    notes.push_back("the FSDP gathers are priced and exported in bf16 (enable_fsdp_float8_all_gather = false); "
                    "--fsdp-float8-all-gather prices and exports them in fp8, as torchtitan's fp8 configs run");
  if (f == ExportFormat::DeepSpeed && s.layout.recompute == Recompute::Full)
    notes.push_back("recompute=full: DeepSpeed does not recompute on its own; the model code must checkpoint every "
                    "transformer layer: deepspeed.checkpointing.checkpoint(layer, ...) (which the "
                    "activation_checkpointing section configures), or model.gradient_checkpointing_enable() for a "
                    "Hugging Face model, or --checkpoint-activations in Megatron-DeepSpeed");
  return notes;
}

std::string export_plan(ExportFormat f, const Scenario& s, const Prediction& p) {
  switch (f) {
    case ExportFormat::Yaml: return plan_yaml(s, p);
    case ExportFormat::Megatron: return export_megatron(s);
    case ExportFormat::DeepSpeed: return export_deepspeed(s);
    case ExportFormat::Torchtitan: return export_torchtitan(s);
  }
  return "";
}

}  // namespace sixfold
