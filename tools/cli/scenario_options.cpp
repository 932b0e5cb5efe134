#include "tools/cli/scenario_options.hpp"

#include "common/parse.hpp"
#include "common/yaml_util.hpp"
#include "models/layout_fields.hpp"
#include "models/model_zoo.hpp"
#include "tools/cli/flags.hpp"

namespace sixfold::cli {

void ScenarioFlags::add_to(CLI::App& app, bool with_layout) {
  app.add_option("--scenario", scenario, "built-in scenario name (configs/scenarios) or a scenario YAML");
  app.add_option("--model", model, "zoo name (see `sixfold models`), a zoo-style YAML, or a Hugging Face config.json");
  app.add_option("--hardware", hardware, "GPU profile name (see `sixfold hardware`) or a profile YAML");
  app.add_option("--cluster", cluster, "cluster YAML: hardware, gpus_per_node, network bandwidth and latency");
  using namespace limits;
  add_count(app, "--gpus", gpus, 1, kGpus, "number of GPUs");
  add_count(app, "--gpus-per-node", gpus_per_node, 1, kGpus, "GPUs per node (default: the profile's)");
  add_count(app, "--nvlink-domain", nvlink_domain, 1, kGpus,
            "GPUs on one NVLink fabric when it spans nodes, e.g. 72 on GB200 NVL72, 36 on NVL36 (default: the profile's; "
            "never fewer than --gpus-per-node)");
  add_rate(app, "--network-bandwidth", network_bandwidth,
           "per-GPU bandwidth across nodes, with a unit: 50GB/s, 400Gb/s, 400Gbps, 46.6GiB/s");
  add_rate(app, "--intra-node-bandwidth", intra_node_bandwidth, "per-GPU NVLink/PCIe bandwidth, with a unit: 450GB/s");
  add_count(app, "--seq", seq, 1, kSeq,
            "sequence length in tokens (default: the model's max_seq up to 8192, else 2048; above max_seq only for rotary "
            "positions, as long-context training runs)");
  add_count(app, "--global-batch", global_batch, 1, kGlobalBatch,
            "sequences per optimizer step (default: dp x micro-batch x pp)");
  app.add_option("--dtype", dtype, "bf16 | fp16 | fp8 | fp32 (default bf16)");
  app.add_flag("--no-flash-attention", no_flash_attention, "price unfused attention that saves the s x s scores");
  app.add_option("--attention-kernel", attention_kernel,
                 "flash-attention-1 | flash-attention-2 | te-fused: the flash kernel, priced from its measured speed "
                 "(default: the framework's; megatron: te-fused, the others: flash-attention-2)");
  add_count(app, "--train-metric-passes", train_metric_passes, 0, 16,
            "cross-entropy passes over the logits after each micro-batch's backward, for training metrics "
            "(Composer/llm-foundry: 2; default 0)");
  app.add_flag("--no-overlap-p2p-communication", no_overlap_p2p,
               "pipeline sends block their stage under the interleaved schedule (Megatron's flag; by default "
               "megatron overlaps them with the next chunk's compute)");
  app.add_flag("--overlap-moe-expert-parallel-comm", overlap_moe_ep,
               "hide the MoE all-to-all behind another micro-batch's compute (Megatron's flag; DeepSeek's DualPipe)");
  app.add_flag("--moe-enable-deepep", deepep,
               "Megatron's flex token dispatcher with DeepEP (--moe-token-dispatcher-type flex --moe-enable-deepep; "
               "HybridEP alike): a token crosses the network once per node holding its experts, then NVLink "
               "(Megatron only)");
  app.add_option("--cross-entropy", cross_entropy,
                 "megatron | torch | flash-attn | torch-compiled: the loss's implementation and the logits copies "
                 "it holds (default: the framework's; torchtitan: torch, torch-compiled with --compile; the others: "
                 "megatron)");
  app.add_flag("--compile", compile,
               "torch.compile each transformer block and the loss (torchtitan's --compile.enable, training.compile in its older configs): "
               "the backward keeps only what it reads, the loss runs fused (torchtitan only)");
  app.add_flag("--fsdp-float8-all-gather", fsdp_float8_all_gather,
               "FSDP all-gathers the fp8 linear weights in fp8 (torchtitan's enable_fsdp_float8_all_gather with "
               "precompute_float8_dynamic_scale_for_fsdp): half the gather bytes, no per-GEMM weight cast "
               "(torchtitan with --dtype fp8; it changes layouts whose ZeRO-3 shards over dp x cp > 1)");
  app.add_option("--float8-recipe", float8_recipe,
                 "tensorwise (default) | rowwise | rowwise_with_gw_hp: torchao's float8 scaling recipe (torchtitan's "
                 "float8 recipe_name): rowwise scales every GEMM operand per row, casting what both backward GEMMs read "
                 "twice, and runs bf16 tensor-parallel all-gathers (torchtitan with --dtype fp8)");
  app.add_option("--adam-moments", adam_moments,
                 "fp32 (default) | bf16: Adam's moments in bf16 (Megatron-Core's precision-aware optimizer)");
  app.add_flag("--grad-reduce-in-bf16", grad_reduce_in_bf16,
               "reduce gradients in bf16, not fp32: Megatron-LM's flag (keeps its DDP gradient buffer in bf16: "
               "halves the gradients' memory and the data-parallel reduction's bytes); torchtitan's "
               "training.mixed_precision_reduce bfloat16 (FSDP reduce-scatters in bf16, the shards stay fp32)");
  app.add_flag("--activation-func-fp8-input-store", fp8_activation_input_store,
               "keep the SwiGLU's input in fp8 for the backward (Megatron-Core's TransformerConfig."
               "activation_func_fp8_input_store; it has no Megatron-LM flag, the export says how to set it)");
  add_count(app, "--mtp-num-layers", mtp_layers, 0, kMtpLayers,
            "multi-token prediction depths trained on the last stage (Megatron's flag; DeepSeek-V3: 1)");
  app.add_option("--framework", framework,
                 "megatron | deepspeed | deepspeed-legacy | torchtitan: whose loss, ZeRO-3 gathers and overlap to price (default megatron)");
  if (!with_layout) return;
  app.add_option("--plan", plan, "a plan file written by `sixfold plan --export`");
  // Megatron-LM derives the data-parallel size from the world size; torchtitan users state theirs
  // (data_parallel_shard_degree x data_parallel_replicate_degree). Both are served: --dp is checked
  // against gpus / (tp x pp x cp), or gives the GPU count when --gpus is absent.
  add_count(app, "--dp", dp, 1, limits::kGpus,
            "data-parallel size, a check: sixfold derives it as GPUs / (tp x pp x cp), as Megatron-LM does "
            "(without --gpus it sets the GPU count: dp x tp x pp x cp)");
  // One option per layout field with a flag (models/layout_fields.hpp): checked as it is read,
  // applied in resolve.
  for (const LayoutField& f : layout_fields()) {
    if (!f.flag) continue;
    const std::string key = f.key, flag = f.flag;
    if (f.type == FieldType::Flag) {
      app.add_flag_callback(flag, [this, key] { layout_options[key] = "true"; }, f.help);
    } else {
      const LayoutField* field = &f;
      app.add_option_function<std::string>(
          flag,
          [this, field, key, flag](const std::string& text) {
            Layout probe;
            field->set(probe, text, flag);
            layout_options[key] = text;
          },
          f.help);
    }
    if (key == "sp") app.add_flag("--no-sp", no_sp, "turn sequence parallelism off (over a plan or scenario)");
  }
}

std::string ScenarioFlags::origin() const {
  if (!plan.empty()) return " (values not given as flags come from --plan " + plan + ")";
  if (!scenario.empty()) return " (values not given as flags come from --scenario " + scenario + ")";
  return "";
}

void ScenarioFlags::validate(const Scenario& s) const {
  try {
    validate_layout(s.model, s.layout, s.work, s.gpus);
  } catch (const LayoutError& e) {
    throw LayoutError(e.constraint(), e.detail() + origin(), e.subject());
  }
}

Scenario ScenarioFlags::resolve(bool with_layout) const {
  if (!scenario.empty() && !plan.empty()) throw UsageError("give --scenario or --plan, not both");
  Scenario s;
  bool have_base = false;
  if (!plan.empty()) {
    s = parse_scenario(load_yaml_file(plan));
    have_base = true;
  } else if (!scenario.empty()) {
    s = load_scenario(scenario);
    have_base = true;
  }
  std::string hw_name = hardware;
  ClusterOverrides overrides;
  if (!cluster.empty()) {
    std::string cluster_hw;
    overrides = load_cluster_overrides(cluster, &cluster_hw);
    if (hw_name.empty()) hw_name = cluster_hw;
  }
  if (!model.empty()) {
    s.model = load_model(model);
    s.model_name = model;
  } else if (!have_base) {
    throw UsageError("--model is required (or --scenario / --plan); see `sixfold models`");
  }
  if (!hw_name.empty()) {
    s.hardware = load_hardware(hw_name);
    s.hardware_name = hw_name;
  } else if (!have_base) {
    throw UsageError("--hardware is required (or --cluster, --scenario, --plan); see `sixfold hardware`");
  }
  if (gpus_per_node) overrides.gpus_per_node = *gpus_per_node;
  if (nvlink_domain) overrides.nvlink_domain = *nvlink_domain;
  if (network_bandwidth) overrides.network_bandwidth = *network_bandwidth;
  if (intra_node_bandwidth) overrides.intra_node_bandwidth = *intra_node_bandwidth;
  apply_overrides(s.hardware, overrides);
  if (s.hardware.gpus_per_node <= 0) throw UsageError("--gpus-per-node (gpus_per_node) must be positive" + origin());

  // Default sequence: the model's own length, capped at 8K (long-context maxima are rarely trained at).
  if (!have_base) s.work.seq = s.model.max_seq > 0 ? std::min<Count>(s.model.max_seq, 8192) : 2048;
  if (seq) s.work.seq = *seq;
  // A learned position table has max_seq rows: no longer sequence exists for the model. Rotary
  // positions extend past the length a model was pretrained at (long-context training runs so,
  // and torchtitan's CP benchmarks train llama3-8b at 262144): allowed, with a note
  // (print_workload_notes).
  if (s.model.learned_positions && s.model.max_seq > 0 && s.work.seq > s.model.max_seq)
    throw UsageError("--seq " + std::to_string(s.work.seq) + " is above " + s.model.name + "'s maximum sequence length " +
                     std::to_string(s.model.max_seq) + " (max_seq: its learned position table has that many rows)" +
                     (seq ? "" : origin()));
  if (!dtype.empty()) s.work.dtype = parse_dtype(dtype);
  if (no_flash_attention) s.work.flash_attention = false;
  if (!attention_kernel.empty()) s.work.attention_kernel = parse_attention_kernel(attention_kernel);
  if (!cross_entropy.empty()) s.work.cross_entropy = parse_cross_entropy(cross_entropy);
  if (train_metric_passes) s.work.train_metric_passes = *train_metric_passes;
  if (no_overlap_p2p) s.work.overlap_p2p_comm = false;
  if (overlap_moe_ep) s.work.overlap_moe_ep_comm = true;
  if (deepep) s.work.deepep_dispatch = true;
  if (!framework.empty()) s.work.framework = parse_framework(framework);
  if (!adam_moments.empty()) s.work.bf16_adam_moments = parse_adam_moments(adam_moments);
  if (fp8_activation_input_store) s.work.fp8_activation_input_store = true;
  if (grad_reduce_in_bf16) s.work.grad_reduce_in_bf16 = true;
  if (compile) s.work.compile = true;
  if (fsdp_float8_all_gather) s.work.fsdp_float8_all_gather = true;
  if (!float8_recipe.empty()) s.work.float8_recipe = parse_float8_recipe(float8_recipe);
  if (mtp_layers) s.work.mtp_layers = *mtp_layers;

  Layout& l = s.layout;
  if (with_layout) {
    for (const LayoutField& f : layout_fields()) {
      const auto it = layout_options.find(f.key);
      if (it != layout_options.end()) f.set(l, it->second, f.flag);
    }
    if (given("vpp") && l.vpp > 1 && !given("schedule")) l.schedule = Schedule::Interleaved;
    // A scenario or plan file gave its own (parse_scenario applies the same default where it gives none).
    if (!given("dp_overlap") && !have_base) l.dp_overlap = default_dp_overlap(s.work.framework, l.pp);
    if (given("pipeline_model_parallel_layout") && !given("vpp") && !given("schedule")) take_vpp_from_pipeline_layout(l);
    if (given("sp") && no_sp) throw UsageError("--sp and --no-sp contradict each other");
    if (no_sp) l.sp = false;
    // torchtitan's TP plan always shards the sequence (its norms run as SequenceParallel, and it
    // has no tensor parallelism without): sp comes with tp > 1.
    if (s.work.framework == Framework::Torchtitan && l.tp > 1) {
      if (no_sp)
        throw UsageError("--no-sp with framework torchtitan: its tensor parallelism always shards the sequence "
                         "(SequenceParallel norms in its TP plan)");
      l.sp = true;
    }
    const std::string recompute = given("recompute") ? layout_options.at("recompute") : "";
    // torchtitan's "selective" activation checkpointing is op-level by default (selective_ac_option
    // = "op"); Megatron's core-attention recompute does not exist there.
    if (recompute == "selective" && !given("recompute_modules") && s.work.framework == Framework::Torchtitan)
      l.recompute = Recompute::SelectiveOp;
    if (given("recompute_modules")) {
      if (given("recompute") && l.recompute != Recompute::Selective)
        throw UsageError("--recompute-modules needs --recompute selective (got " + recompute + ")");
      l.recompute = Recompute::Selective;
    }
    // Megatron's block recompute is a form of full recompute (--recompute-granularity full).
    if (given("recompute_num_layers") && l.recompute_num_layers > 0) {
      if (given("recompute") && l.recompute != Recompute::Full)
        throw UsageError("--recompute-num-layers needs --recompute full (got " + recompute + ")");
      l.recompute = Recompute::Full;
    }
    // torchtitan's every-k-th layer checkpointing checkpoints whole blocks: full recompute of some.
    if (given("recompute_every") && l.recompute_every > 0) {
      if (given("recompute") && l.recompute != Recompute::Full && recompute != "selective")
        throw UsageError("--recompute-every needs --recompute full (got " + recompute + ")");
      l.recompute = Recompute::Full;
    }
  }
  // Degrees are at most kGpus each: their product fits in 64 bits.
  const long long model_parallel = l.model_parallel();
  if (gpus) s.gpus = *gpus;
  else if (dp || !have_base) {
    const long long world = model_parallel * (dp ? *dp : 1);  // each factor at most kGpus: fits in 64 bits
    if (world > limits::kGpus)
      throw UsageError(std::string(dp ? "--dp x " : "") + "--tp x --pp x --cp = " + std::to_string(world) +
                       " is above " + std::to_string(limits::kGpus) + " GPUs");
    s.gpus = int(world);
  }
  try {
    l.dp = dp_for_gpus(l, s.gpus);
  } catch (const LayoutError& e) {
    throw LayoutError(e.constraint(), e.detail() + " (--gpus)" + origin(), e.subject());
  }
  if (dp && l.dp != *dp)
    throw UsageError("--dp " + std::to_string(*dp) + " disagrees with the layout: " + std::to_string(s.gpus) +
                     " GPUs / (tp " + std::to_string(l.tp) + " x pp " + std::to_string(l.pp) + " x cp " +
                     std::to_string(l.cp) + ") = dp " + std::to_string(l.dp) + (gpus ? "" : origin()));
  if (global_batch) s.work.global_batch = *global_batch;
  else if (!have_base) {
    const long long batch = Count(l.dp) * l.micro_batch * l.pp;  // each below 2^24: no overflow
    if (batch > limits::kGlobalBatch)
      throw UsageError("the default global batch dp x micro-batch x pp = " + std::to_string(batch) + " is above " +
                       std::to_string(limits::kGlobalBatch) + "; give --global-batch");
    s.work.global_batch = batch;
  }
  if (Count(l.micro_batch) * s.work.seq > limits::kMicroBatchTokens)
    throw UsageError("--micro-batch " + std::to_string(l.micro_batch) + " x --seq " + std::to_string(s.work.seq) +
                     " is above " + std::to_string(limits::kMicroBatchTokens) + " tokens per micro-batch" + origin());
  return s;
}

}  // namespace sixfold::cli
