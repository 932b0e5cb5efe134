#include "models/layout.hpp"

#include <sstream>

#include "common/error.hpp"
#include "common/parse.hpp"
#include "models/layout_fields.hpp"
#include "models/pipeline_layout.hpp"

namespace sixfold {

Count micro_batches_per_step(const Layout& l, const Workload& w) {
  Count per_step = 0;  // dp x micro-batch; 0 (and so no micro-batch) when it overflows or is not positive
  if (l.dp < 1 || l.micro_batch < 1 || __builtin_mul_overflow(Count(l.dp), l.micro_batch, &per_step)) return 0;
  return w.global_batch / per_step;
}

std::vector<int> stage_layer_counts(const ModelSpec& m, const Layout& l) {
  std::vector<int> counts(l.pp, 0);
  if (l.pp == 1) {
    counts[0] = m.layers;
    return counts;
  }
  if (l.accounts_pipeline_split() || !l.pipeline_layout.empty()) {  // a stage holds its virtual stages (chunk * pp + stage)
    const std::vector<int> chunks = virtual_stage_layer_counts(m, l);
    for (size_t i = 0; i < chunks.size(); ++i) counts[i % l.pp] += chunks[i];
    return counts;
  }
  int rest = m.layers;
  int first = l.first_stage_layers, last = l.last_stage_layers;
  int middle_stages = l.pp;
  if (first > 0) { rest -= first; --middle_stages; }
  if (last > 0) { rest -= last; --middle_stages; }
  int base = middle_stages > 0 ? rest / middle_stages : 0;
  int extra = middle_stages > 0 ? rest % middle_stages : 0;
  for (int s = 0; s < l.pp; ++s) {
    if (s == 0 && first > 0) counts[s] = first;
    else if (s == l.pp - 1 && last > 0) counts[s] = last;
    else counts[s] = base + (extra-- > 0 ? 1 : 0);
  }
  return counts;
}

std::vector<int> virtual_stage_layer_counts(const ModelSpec& m, const Layout& l) {
  const int p = l.pp, v = l.virtual_stages();
  if (!l.pipeline_layout.empty()) {
    std::vector<int> out;
    for (const PipelineStagePart& part : parse_pipeline_layout(l.pipeline_layout, "pipeline_model_parallel_layout"))
      out.push_back(part.layers);
    // A layout of another stage count is refused by validate_layout; sized here for its callers.
    out.resize(size_t(p) * size_t(v), 0);
    return out;
  }
  if (l.accounts_pipeline_split()) {
    const int e = l.embedding_in_pipeline_split, lo = l.loss_in_pipeline_split;
    std::vector<int> out(p * v, (m.layers + e + lo) / (p * v));
    out.front() -= e;
    out.back() -= lo;
    return out;
  }
  const std::vector<int> per_stage = stage_layer_counts(m, l);
  std::vector<int> out(p * v, 0);
  for (int s = 0; s < p; ++s)
    for (int c = 0; c < v; ++c) out[c * p + s] = per_stage[s] / v + (c < per_stage[s] % v ? 1 : 0);
  return out;
}

bool keeps_activations(const std::vector<int>& chunks, const Layout& l, int chunk, int index) {
  if (!l.partial_recompute()) return false;
  if (l.recompute_num_layers > 0) return index >= l.recompute_num_layers;
  // torchtitan: the rank's blocks counted from 1 over its virtual stages in order.
  const int pp = std::max(1, l.pp), stage = chunk % pp;
  int count = index + 1;
  for (int c = stage; c < chunk; c += pp) count += chunks[size_t(c)];
  return count % l.recompute_every != 0;
}

int fully_recomputed_layers(const ModelSpec& m, const Layout& l) {
  if (l.recompute != Recompute::Full) return 0;
  if (!l.partial_recompute()) return m.layers;
  const std::vector<int> chunks = virtual_stage_layer_counts(m, l);
  int n = 0;
  for (size_t c = 0; c < chunks.size(); ++c)
    for (int i = 0; i < chunks[c]; ++i) n += !keeps_activations(chunks, l, int(c), i);
  return n;
}

void take_vpp_from_pipeline_layout(Layout& l) {
  if (l.pipeline_layout.empty() || l.pp < 1) return;
  const int stages = int(parse_pipeline_layout(l.pipeline_layout, "pipeline_model_parallel_layout").size());
  if (stages % l.pp != 0 || stages / l.pp < 1) return;
  l.vpp = stages / l.pp;
  if (l.vpp > 1) l.schedule = Schedule::Interleaved;
}

void validate_workload(const ModelSpec& m, const Workload& w) {
  auto need = [](bool ok, const char* constraint, const std::string& detail) {
    if (!ok) throw LayoutError(constraint, detail, "workload");
  };
  const auto s = [](auto v) { return std::to_string(v); };
  need(w.mtp_layers >= 0, "mtp layers not negative", s(w.mtp_layers));
  need(w.mtp_layers == 0 || w.framework == Framework::Megatron, "multi-token prediction is Megatron's",
       "--mtp-num-layers with framework " + to_string(w.framework));
  if (w.fp8_activation_input_store) {
    need(w.framework == Framework::Megatron, "the activation's fp8 input store is Megatron's",
         "--activation-func-fp8-input-store with framework " + to_string(w.framework));
    need(m.activation == Activation::SwiGLU, "the activation's fp8 input store needs SwiGLU",
         "model " + m.name + " uses another activation");
  }
  if (w.grad_reduce_in_bf16) {
    need(w.framework == Framework::Megatron || w.framework == Framework::Torchtitan,
         "gradients reduced in bf16 is Megatron's --grad-reduce-in-bf16 or FSDP's bf16 reduce dtype",
         "--grad-reduce-in-bf16 with framework " + to_string(w.framework) + " (DeepSpeed keeps bf16 gradients already)");
    need(w.dtype == Dtype::BF16 || w.dtype == Dtype::FP8, "gradients reduced in bf16 needs bf16 or fp8 training",
         "--grad-reduce-in-bf16 with dtype " + to_string(w.dtype));
  }
  need(!w.compile || w.framework == Framework::Torchtitan, "torch.compile of the blocks is torchtitan's (training.compile)",
       "--compile with framework " + to_string(w.framework) +
           " (Megatron-LM and DeepSpeed run fused kernels of their own; use --framework torchtitan)");
  if (w.fsdp_float8_all_gather) {
    need(w.framework == Framework::Torchtitan, "the FSDP float8 all-gather is torchtitan's (torchao's Float8Linear)",
         "--fsdp-float8-all-gather with framework " + to_string(w.framework));
    need(w.dtype == Dtype::FP8, "the FSDP float8 all-gather needs fp8 training",
         "--fsdp-float8-all-gather with dtype " + to_string(w.dtype));
  }
  if (w.float8_recipe != Float8Recipe::Tensorwise) {
    const std::string given = "--float8-recipe " + to_string(w.float8_recipe);
    need(w.framework == Framework::Torchtitan, "the float8 recipes are torchtitan's (torchao's Float8Linear)",
         given + " with framework " + to_string(w.framework));
    need(w.dtype == Dtype::FP8, "a float8 recipe needs fp8 training", given + " with dtype " + to_string(w.dtype));
    // torchtitan's float8 converter asserts this (components/quantization/float8.py): torchao's
    // float8 all-gather casts a weight with one scale for the whole tensor.
    need(!w.fsdp_float8_all_gather, "the FSDP float8 all-gather runs with the tensorwise recipe only",
         given + " with --fsdp-float8-all-gather");
  }
  if (w.deepep_dispatch) {
    need(w.framework == Framework::Megatron, "the DeepEP dispatcher is Megatron's (its flex token dispatcher)",
         "--moe-enable-deepep with framework " + to_string(w.framework));
    need(m.moe.enabled(), "the DeepEP dispatcher needs an MoE model", "--moe-enable-deepep with a dense model");
  }
}

void validate_layout(const ModelSpec& m, const Layout& l, const Workload& w, int gpus) {
  auto need = [](bool ok, const char* constraint, const std::string& detail) {
    if (!ok) throw LayoutError(constraint, detail);
  };
  const auto s = [](auto v) { return std::to_string(v); };
  validate_workload(m, w);
  for (const auto& [name, degree] : {std::pair{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"ep", l.ep},
                                      {"etp", l.etp}, {"vpp", l.vpp}})
    need(degree >= 1, "degrees are positive", std::string(name) + "=" + s(degree) + " (in " + describe(l) + ")");
  // Each degree below 2^20 GPUs keeps the products below in 64 bits.
  for (const auto& [name, degree] : {std::pair{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"ep", l.ep},
                                      {"etp", l.etp}})
    need(degree <= limits::kGpus, "degrees are at most 2^20", std::string(name) + "=" + s(degree));
  need(Count(l.dp) * l.tp * l.pp <= limits::kGpus && Count(l.dp) * l.tp * l.pp * l.cp <= limits::kGpus,
       "dp*tp*pp*cp at most 2^20 GPUs", describe(l));
  if (gpus > 0)
    need(l.gpus() == gpus, "dp*tp*pp*cp = gpus",
         s(l.dp) + "*" + s(l.tp) + "*" + s(l.pp) + "*" + s(l.cp) + " = " + s(l.gpus()) + ", not " + s(gpus));
  need(m.heads >= 1 && m.kv_heads >= 1, "the model has heads", "heads=" + s(m.heads) + ", kv_heads=" + s(m.kv_heads));
  need(m.heads % l.tp == 0, "tp divides heads", "tp=" + s(l.tp) + ", heads=" + s(m.heads));
  need(m.kv_heads % l.tp == 0 || l.tp % m.kv_heads == 0, "tp divides kv heads (or kv heads divide tp)",
       "tp=" + s(l.tp) + ", kv_heads=" + s(m.kv_heads));
  need(!l.sp || l.tp > 1, "sequence parallelism needs tp > 1", "sp on with tp=1");
  need(l.zero >= 0 && l.zero <= 3, "zero stage in 0..3", "zero=" + s(l.zero));
  need(l.micro_batch >= 1, "micro-batch is positive", s(l.micro_batch));
  need(w.seq >= 1 && w.global_batch >= 1, "sequence and global batch are positive",
       "seq " + s(w.seq) + ", global batch " + s(w.global_batch));
  const Count per_step = micro_batches_per_step(l, w);
  need(per_step >= 1 && per_step * l.dp * l.micro_batch == w.global_batch, "global batch divisible by dp*micro-batch",
       "global batch " + s(w.global_batch) + ", dp " + s(l.dp) + ", micro-batch " + s(l.micro_batch));
  need(w.seq % (2 * l.cp) == 0 || l.cp == 1, "cp splits the sequence into 2*cp chunks",
       "seq " + s(w.seq) + ", cp " + s(l.cp));
  if (l.sp) need(w.seq / l.cp % l.tp == 0, "tp divides the sequence under sp", "seq/cp " + s(w.seq / l.cp) + ", tp " + s(l.tp));
  // TP communication overlap: Megatron-LM's arguments.py asserts that --tp-comm-overlap runs with
  // --sequence-parallel ("Tensor parallel communication/GEMM overlap can happen only when sequence
  // parallelism is enabled"); the DeepSpeed engine has none (torchtitan's TP is always sequence
  // parallel). With tp = 1 there is nothing to overlap, and nothing is priced.
  if (l.tp_overlap && l.tp > 1) {
    need(w.framework != Framework::DeepSpeed && w.framework != Framework::DeepSpeedLegacy,
         "TP communication overlap is Megatron's (--tp-comm-overlap) or torchtitan's (async TP)",
         "tp-overlap with framework " + to_string(w.framework) + ", which overlaps no TP communication");
    need(l.sp, "Megatron overlaps TP communication only under sequence parallelism",
         "tp-overlap with tp=" + s(l.tp) + " without sp (turn sp on, as Megatron-LM's arguments.py requires)");
  }
  if (m.moe.enabled()) {
    need(m.moe.num_experts % l.ep == 0, "ep divides experts", "ep=" + s(l.ep) + ", experts=" + s(m.moe.num_experts));
    need((Count(l.tp) * l.cp * l.dp) % (Count(l.ep) * l.etp) == 0, "ep*etp divides tp*cp*dp",
         "ep*etp=" + s(Count(l.ep) * l.etp) + ", tp*cp*dp=" + s(Count(l.tp) * l.cp * l.dp));
    // Megatron-LM's arguments.py: "When using MoE and tensor parallelism, sequence parallelism
    // must be used" (its token dispatcher routes each TP rank's own sequence shard).
    need(w.framework != Framework::Megatron || l.tp == 1 || l.sp, "Megatron runs MoE with tp > 1 only with sp",
         "tp=" + s(l.tp) + " without sp (turn sp on; DeepSpeed runs it without)");
  } else {
    need(l.ep == 1 && l.etp == 1, "ep and etp are 1 for a dense model", "ep=" + s(l.ep) + ", etp=" + s(l.etp));
  }
  need(l.pp <= m.layers, "pp at most the layers", "pp=" + s(l.pp) + ", layers=" + s(m.layers));
  // DeepSpeed pipelines with its PipelineEngine, which asserts a ZeRO stage below 2
  // (deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline
  // parallelism") and trains with one schedule, TrainSchedule, 1F1B (runtime/pipe/schedule.py).
  const bool deepspeed = runs_deepspeed_engine(w.framework);
  // Its sequence parallelism is Ulysses (an all-to-all of heads, not priced); ring context
  // parallelism is Megatron's and torchtitan's.
  need(!deepspeed || l.cp == 1, "context parallelism (ring attention) is Megatron's and torchtitan's",
       "cp=" + s(l.cp) + " with framework " + to_string(w.framework) + " (DeepSpeed's Ulysses is not priced)");
  need(pipeline_allows_zero(w.framework, l.pp, l.zero), "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1",
       "pp=" + s(l.pp) + " with zero=" + s(l.zero) + " (ZeRO-2 and ZeRO-3 are incompatible with its pipeline)");
  need(!deepspeed || l.pp == 1 || l.schedule == Schedule::OneFOneB, "DeepSpeed's pipeline engine runs 1F1B only",
       "schedule " + to_string(l.schedule) + " with pp=" + s(l.pp));
  need(l.dp_shard >= 0 && (l.dp_shard == 0 || l.dp % l.dp_shard == 0), "dp_shard divides dp",
       "dp_shard=" + s(l.dp_shard) + ", dp=" + s(l.dp));
  if (l.shard_dp() < l.dp) {
    need(hybrid_sharding_allows(w.framework, l.zero), "hybrid sharding as the framework runs it",
         "dp_shard=" + s(l.dp_shard) + " with zero=" + s(l.zero) + " and framework " + to_string(w.framework) +
             " (torchtitan and DeepSpeed (MiCS) shard parameters so: zero 3; Megatron its distributed optimizer: "
             "zero 1)");
    need(!m.moe.enabled(), "hybrid sharding is priced for dense models",
         "dp_shard=" + s(l.dp_shard) + " with " + s(m.moe.num_experts) + " experts");
  }
  need(pipeline_allows_dp_overlap(w.framework, l.pp, l.dp * l.cp > 1, l.dp_overlap),
       "DeepSpeed's pipeline engine reduces gradients after the last backward (dp-overlap none)",
       "dp-overlap " + to_string(l.dp_overlap) + " with pp=" + s(l.pp) + " and dp=" + s(l.dp));
  if (l.recompute_modules != 0) {
    namespace rm = recompute_module;
    const unsigned mods = l.recompute_modules;
    need(l.recompute == Recompute::Selective, "recompute modules need selective recompute",
         "recompute=" + to_string(l.recompute) + ", modules " + recompute_modules_string(mods));
    need(!(mods & rm::kMlaUpProj) || m.mla.enabled, "recompute module mla_up_proj needs MLA attention",
         recompute_modules_string(mods));
    need(!(mods & (rm::kMoe | rm::kMoeAct)) || m.moe.enabled(), "recompute modules moe and moe_act need an MoE model",
         recompute_modules_string(mods));
    need(!(mods & rm::kSharedExperts) || m.moe.shared_experts > 0, "recompute module shared_experts needs shared experts",
         recompute_modules_string(mods));
  }
  if (l.recompute_num_layers != 0) {
    need(l.recompute_num_layers > 0, "recompute layers not negative", s(l.recompute_num_layers));
    need(l.recompute == Recompute::Full, "block recompute (--recompute-num-layers) needs full recompute",
         "recompute=" + to_string(l.recompute) + ", recompute_num_layers " + s(l.recompute_num_layers));
    need(w.framework == Framework::Megatron, "block recompute (--recompute-num-layers) is Megatron's",
         "--recompute-num-layers with framework " + to_string(w.framework) +
             " (torchtitan checkpoints every k-th layer: --recompute-every; DeepSpeed every layer or none)");
  }
  if (l.recompute_every != 0) {
    need(l.recompute_every >= 2, "recompute every k-th layer with k at least 2",
         "recompute_every " + s(l.recompute_every) + " (1 is --recompute full)");
    need(l.recompute == Recompute::Full, "every k-th layer recompute (--recompute-every) needs full recompute",
         "recompute=" + to_string(l.recompute) + ", recompute_every " + s(l.recompute_every));
    need(w.framework == Framework::Torchtitan, "every k-th layer recompute (--recompute-every) is torchtitan's",
         "--recompute-every with framework " + to_string(w.framework) +
             " (Megatron recomputes the first N layers of each stage: --recompute-num-layers)");
    need(l.recompute_num_layers == 0, "one placement of partial recompute", "--recompute-every with --recompute-num-layers");
  }
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    need(l.pp > 1, "uneven stages need pp > 1", "pp=1");
    int fixed = l.first_stage_layers + l.last_stage_layers;
    int others = l.pp - (l.first_stage_layers > 0) - (l.last_stage_layers > 0);
    need(fixed < m.layers && (others == 0 ? fixed == m.layers : m.layers - fixed >= others),
         "uneven stages leave at least one layer per stage",
         "first " + s(l.first_stage_layers) + ", last " + s(l.last_stage_layers) + ", layers " + s(m.layers));
  }
  if (!l.pipeline_layout.empty()) {
    const std::vector<PipelineStagePart> stages = parse_pipeline_layout(l.pipeline_layout, "pipeline_model_parallel_layout");
    const int want = l.pp * l.virtual_stages();
    need(w.framework == Framework::Megatron, "the custom pipeline layout is Megatron's",
         "--pipeline-layout with framework " + to_string(w.framework));
    need(l.pp > 1, "a pipeline layout needs pp > 1", "pp=1");
    need(int(stages.size()) == want, "a pipeline layout has pp x vpp stages",
         "'" + l.pipeline_layout + "' has " + s(int(stages.size())) + " stages, pp=" + s(l.pp) + " x vpp=" +
             s(l.virtual_stages()) + " is " + s(want) +
             (int(stages.size()) % l.pp == 0 ? " (vpp " + s(int(stages.size()) / l.pp) + " fits it)" : ""));
    need(!l.accounts_pipeline_split() && l.first_stage_layers == 0 && l.last_stage_layers == 0,
         "a pipeline layout excludes the other uneven-split options",
         "--pipeline-layout with --first/last-stage-layers or --account-for-embedding/loss-in-pipeline-split");
    int layers = 0, mtp = 0, embeddings = 0, losses = 0;
    for (const PipelineStagePart& p : stages) {
      layers += p.layers;
      mtp += p.mtp;
      embeddings += p.embedding;
      losses += p.loss;
    }
    need(layers == m.layers, "a pipeline layout places every transformer layer once",
         "'" + l.pipeline_layout + "' has " + s(layers) + " 't', the model " + s(m.layers) + " layers");
    need(embeddings == 1 && stages.front().embedding, "a pipeline layout has the embedding 'E' in its first stage",
         "'" + l.pipeline_layout + "'");
    need(losses == 1 && stages.back().loss, "a pipeline layout has the loss 'L' in its last stage",
         "'" + l.pipeline_layout + "'");
    // sixfold builds the MTP layers with the output head on the last stage (step_program.cpp).
    need(mtp == w.mtp_layers && stages.back().mtp == mtp,
         "a pipeline layout has the MTP layers 'm' (--mtp-num-layers) in its last stage",
         "'" + l.pipeline_layout + "' has " + s(mtp) + " 'm'" + (mtp > stages.back().mtp ? " outside the last stage" : "") +
             ", mtp layers " + s(w.mtp_layers));
  }
  if (l.accounts_pipeline_split()) {
    const int units = m.layers + l.embedding_in_pipeline_split + l.loss_in_pipeline_split;
    need(w.framework == Framework::Megatron, "the embedding/loss pipeline split is Megatron's",
         "--account-for-embedding/loss-in-pipeline-split with framework " + to_string(w.framework));
    need(l.pp > 1, "the embedding/loss pipeline split needs pp > 1", "pp=1");
    need(l.first_stage_layers == 0 && l.last_stage_layers == 0,
         "the embedding/loss pipeline split excludes first/last stage layers",
         "first " + s(l.first_stage_layers) + ", last " + s(l.last_stage_layers));
    need(units % (l.pp * l.virtual_stages()) == 0, "layers with the embedding and loss divide into pp*vpp stages",
         s(m.layers) + " layers + " + s(units - m.layers) + " over " + s(l.pp) + " x " + s(l.virtual_stages()) +
             " virtual stages");
  }
  if (l.schedule == Schedule::Interleaved) {
    need(l.pp > 1, "interleaved schedule needs pp > 1", "pp=1");
    // Megatron needs equal virtual stages (the embedding/loss split's one-fewer first and last are
    // checked above); torchtitan splits the layers into pp x vpp stages as evenly as it can
    // (generate_split_points), so only needs a layer for each.
    if (!l.accounts_pipeline_split() && l.pipeline_layout.empty())
      for (int c : stage_layer_counts(m, l)) {
        if (w.framework == Framework::Torchtitan)
          need(c >= l.vpp, "vpp at most the layers per stage", "vpp=" + s(l.vpp) + ", a stage has " + s(c) + " layers");
        else
          need(c % l.vpp == 0, "vpp divides layers per stage", "vpp=" + s(l.vpp) + ", a stage has " + s(c) + " layers");
      }
    Count mbs = micro_batches_per_step(l, w);
    need(mbs % l.pp == 0, "interleaved schedule needs micro-batches divisible by pp",
         s(mbs) + " micro-batches, pp=" + s(l.pp));
  } else {
    need(l.vpp == 1, "vpp > 1 needs the interleaved schedule", "vpp=" + s(l.vpp));
  }
}

std::string to_string(Dtype d) {
  switch (d) {
    case Dtype::FP32: return "fp32";
    case Dtype::TF32: return "tf32";
    case Dtype::BF16: return "bf16";
    case Dtype::FP16: return "fp16";
    case Dtype::FP8: return "fp8";
  }
  return "?";
}
std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::SelectiveOp: return "selective-op";
    case Recompute::Full: return "full";
  }
  return "?";
}
std::string to_string(DpOverlap o) {
  switch (o) {
    case DpOverlap::None: return "none";
    case DpOverlap::PerLayer: return "per-layer";
    case DpOverlap::Bucketed: return "bucketed";
  }
  return "?";
}
bool runs_deepspeed_engine(Framework framework) {
  return framework == Framework::DeepSpeed || framework == Framework::DeepSpeedLegacy;
}

bool pipeline_allows_zero(Framework framework, int pp, int zero) {
  return pp <= 1 || zero <= 1 || !runs_deepspeed_engine(framework);
}

bool hybrid_sharding_allows(Framework framework, int zero) {
  switch (framework) {
    // FSDP2 on a 2-D mesh (torchtitan's dp_replicate x dp_shard, parallelize_llama.py apply_fsdp).
    case Framework::Torchtitan: return zero == 3;
    // --num-distributed-optimizer-instances (megatron/core/distributed, DistributedDataParallelConfig).
    case Framework::Megatron: return zero == 1;
    // MiCS (deepspeed/runtime/zero/mics.py, mics_shard_size), a ZeRO-3 variant.
    case Framework::DeepSpeed: return zero == 3;
    case Framework::DeepSpeedLegacy: return false;
  }
  return false;
}

bool pipeline_allows_dp_overlap(Framework framework, int pp, bool data_parallel, DpOverlap overlap) {
  return !runs_deepspeed_engine(framework) || pp <= 1 || !data_parallel || overlap == DpOverlap::None;
}

DpOverlap default_dp_overlap(Framework framework, int pp) {
  return pipeline_allows_dp_overlap(framework, pp, true, DpOverlap::Bucketed) ? DpOverlap::Bucketed : DpOverlap::None;
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
    case Schedule::ZeroBubble: return "zero-bubble";
  }
  return "?";
}

namespace {
template <typename E, size_t N>
E parse_enum(const std::string& s, const char* what, const std::pair<const char*, E> (&table)[N]) {
  std::string allowed;
  for (const auto& [name, value] : table) {
    if (s == name) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  throw UsageError("unknown " + std::string(what) + " '" + s + "' (allowed: " + allowed + ")");
}
}  // namespace

Dtype parse_dtype(const std::string& s) {
  static const std::pair<const char*, Dtype> t[] = {
      {"bf16", Dtype::BF16}, {"fp16", Dtype::FP16}, {"fp8", Dtype::FP8}, {"fp32", Dtype::FP32}, {"tf32", Dtype::TF32}};
  return parse_enum(s, "dtype", t);
}
Recompute parse_recompute(const std::string& s) {
  static const std::pair<const char*, Recompute> t[] = {
      {"none", Recompute::None}, {"selective", Recompute::Selective}, {"selective-op", Recompute::SelectiveOp},
      {"full", Recompute::Full}};
  return parse_enum(s, "recompute", t);
}
DpOverlap parse_dp_overlap(const std::string& s) {
  static const std::pair<const char*, DpOverlap> t[] = {
      {"none", DpOverlap::None}, {"per-layer", DpOverlap::PerLayer}, {"bucketed", DpOverlap::Bucketed}};
  return parse_enum(s, "dp-overlap", t);
}
Schedule parse_schedule(const std::string& s) {
  static const std::pair<const char*, Schedule> t[] = {{"1f1b", Schedule::OneFOneB},
                                                       {"interleaved", Schedule::Interleaved},
                                                       {"gpipe", Schedule::GPipe},
                                                       {"zero-bubble", Schedule::ZeroBubble}};
  return parse_enum(s, "schedule", t);
}

namespace {
const std::pair<const char*, unsigned> kModules[] = {
    {"core_attn", recompute_module::kCoreAttn},   {"mlp", recompute_module::kMlp},
    {"layernorm", recompute_module::kLayernorm},  {"mla_up_proj", recompute_module::kMlaUpProj},
    {"moe", recompute_module::kMoe},              {"moe_act", recompute_module::kMoeAct},
    {"shared_experts", recompute_module::kSharedExperts}};
}  // namespace

unsigned parse_recompute_modules(const std::string& list) {
  unsigned bits = 0;
  std::string item;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c != ',' && c != ' ') {
      item += c;
      continue;
    }
    if (item.empty()) continue;
    unsigned bit = 0;
    std::string allowed;
    for (const auto& [name, value] : kModules) {
      if (item == name) bit = value;
      allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    }
    if (!bit) throw UsageError("unknown recompute module '" + item + "' (allowed: " + allowed + ")");
    bits |= bit;
    item.clear();
  }
  return bits;
}

std::vector<unsigned> selective_module_ladder(const ModelSpec& model) {
  namespace rm = recompute_module;
  std::vector<unsigned> out = {0};
  unsigned extra = rm::kCoreAttn;
  if (model.moe.enabled()) out.push_back(extra |= rm::kMoeAct);
  out.push_back(extra |= rm::kLayernorm);
  if (model.mla.enabled) {
    out.push_back(extra | rm::kMlaUpProj);
    // MLA's up-projected queries, keys and values (128 heads x 192 + 128 wide for DeepSeek-V3, 5.7x
    // the hidden size) are the largest activation; recomputing them instead of the core attention
    // is the set DeepSeek-V3 trains with: RMSNorm and MLA up-projection (its report, 3.2.3) and the
    // SwiGLU's output from its cached input (3.3.3).
    out.push_back(rm::kLayernorm | rm::kMlaUpProj | (model.moe.enabled() ? rm::kMoeAct : 0u));
  }
  return out;
}

std::string recompute_modules_string(unsigned modules) {
  std::string out;
  for (const auto& [name, value] : kModules)
    if (modules & value) {
      if (!out.empty()) out += ',';
      out += name;
    }
  return out;
}

Framework parse_framework(const std::string& s) {
  static const std::pair<const char*, Framework> t[] = {
      {"megatron", Framework::Megatron},
      {"deepspeed", Framework::DeepSpeed},
      {"deepspeed-legacy", Framework::DeepSpeedLegacy},
      {"torchtitan", Framework::Torchtitan}};
  return parse_enum(s, "framework", t);
}

AttentionKernel parse_attention_kernel(const std::string& s) {
  static const std::pair<const char*, AttentionKernel> t[] = {{"flash-attention-1", AttentionKernel::Flash1},
                                                              {"flash-attention-2", AttentionKernel::Flash2},
                                                              {"te-fused", AttentionKernel::TeFused}};
  return parse_enum(s, "attention kernel", t);
}

std::string to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::Default: return "default";
    case AttentionKernel::Flash1: return "flash-attention-1";
    case AttentionKernel::Flash2: return "flash-attention-2";
    case AttentionKernel::TeFused: return "te-fused";
  }
  return "?";
}

AttentionKernel attention_kernel_of(const Workload& work) {
  return work.attention_kernel != AttentionKernel::Default ? work.attention_kernel
                                                           : framework_traits(work.framework).attention_kernel;
}

CrossEntropy parse_cross_entropy(const std::string& s) {
  static const std::pair<const char*, CrossEntropy> t[] = {{"megatron", CrossEntropy::MegatronFp32},
                                                           {"torch", CrossEntropy::TorchFp32},
                                                           {"flash-attn", CrossEntropy::FlashAttnFused},
                                                           {"torch-compiled", CrossEntropy::TorchCompiled}};
  return parse_enum(s, "cross-entropy", t);
}

std::string to_string(CrossEntropy c) {
  switch (c) {
    case CrossEntropy::Default: return "default";
    case CrossEntropy::MegatronFp32: return "megatron";
    case CrossEntropy::TorchFp32: return "torch";
    case CrossEntropy::FlashAttnFused: return "flash-attn";
    case CrossEntropy::TorchCompiled: return "torch-compiled";
  }
  return "?";
}

Float8Recipe parse_float8_recipe(const std::string& s) {
  static const std::pair<const char*, Float8Recipe> t[] = {{"tensorwise", Float8Recipe::Tensorwise},
                                                           {"rowwise", Float8Recipe::Rowwise},
                                                           {"rowwise_with_gw_hp", Float8Recipe::RowwiseWithGwHp}};
  return parse_enum(s, "float8 recipe", t);
}

std::string to_string(Float8Recipe r) {
  switch (r) {
    case Float8Recipe::Tensorwise: return "tensorwise";
    case Float8Recipe::Rowwise: return "rowwise";
    case Float8Recipe::RowwiseWithGwHp: return "rowwise_with_gw_hp";
  }
  return "?";
}

bool float8_rowwise(const Workload& work) {
  return work.dtype == Dtype::FP8 && work.framework == Framework::Torchtitan &&
         work.float8_recipe != Float8Recipe::Tensorwise;
}

CrossEntropy cross_entropy_of(const Workload& work) {
  if (work.cross_entropy != CrossEntropy::Default) return work.cross_entropy;
  // torchtitan compiles the loss with the blocks (components/loss.py, build_cross_entropy_loss).
  if (work.compile && work.framework == Framework::Torchtitan) return CrossEntropy::TorchCompiled;
  return framework_traits(work.framework).cross_entropy;
}

bool p2p_overlapped(const Workload& work, const Layout& layout) {
  return work.overlap_p2p_comm && work.framework == Framework::Megatron && layout.pp > 1 &&
         layout.schedule == Schedule::Interleaved && layout.vpp > 1;
}

bool fsdp_float8_gathers_apply(const Workload& work, const Layout& layout) {
  return work.dtype == Dtype::FP8 && work.framework == Framework::Torchtitan && layout.zero == 3 &&
         layout.dp * layout.cp > 1 && work.float8_recipe == Float8Recipe::Tensorwise;
}

bool megatron_allows_fp8_param_gather(const Layout& layout) { return layout.zero >= 1; }

bool megatron_fp8_primary_weights(const Workload& work, const Layout& layout) {
  return work.framework == Framework::Megatron && work.dtype == Dtype::FP8 && megatron_allows_fp8_param_gather(layout);
}

bool fsdp_float8_gathers(const Workload& work, const Layout& layout) {
  return work.fsdp_float8_all_gather && fsdp_float8_gathers_apply(work, layout);
}

bool bf16_optimizer_runs(const Workload& work, const Layout& layout) {
  if (!runs_deepspeed_engine(work.framework) || !work.bf16_optimizer || work.dtype != Dtype::BF16) return false;
  return layout.zero == 0 || (layout.zero == 1 && layout.pp > 1 && work.pipeline_bf16_stage0_only);
}

bool parse_adam_moments(const std::string& s) {
  static const std::pair<const char*, bool> t[] = {{"fp32", false}, {"bf16", true}};
  return parse_enum(s, "adam moments dtype", t);
}

std::string to_string(Framework f) {
  switch (f) {
    case Framework::Megatron: return "megatron";
    case Framework::DeepSpeed: return "deepspeed";
    case Framework::DeepSpeedLegacy: return "deepspeed-legacy";
    case Framework::Torchtitan: return "torchtitan";
  }
  return "?";
}

FrameworkTraits framework_traits(Framework f) {
  FrameworkTraits t;
  switch (f) {
    case Framework::Megatron:
      t.attention_kernel = AttentionKernel::TeFused;
      t.overlap_param_gather = true;
      t.fp32_gradients = true;
      t.moe_probs_in_activation = true;
      break;
    case Framework::DeepSpeedLegacy:
      t.zero3_synchronous = true;
      t.zero3_list_collectives = true;
      [[fallthrough]];
    case Framework::DeepSpeed:
      t.zero3_gather_per_tensor = true;
      t.zero3_regathers_for_recompute = true;
      t.zero3_reduces_in_buckets = true;
      break;
    case Framework::Torchtitan:
      t.cross_entropy = CrossEntropy::TorchFp32;
      t.zero3_copies_out_gathers = true;
      t.zero3_keeps_params_under_pp = true;
      t.zero2_reduces_per_layer = true;
      t.sp_keeps_gathered_input = true;
      t.fp32_gradients = true;
      t.cp_gathers_kv = true;
      t.eager_pointwise_composites = true;
      t.tp_overlap_single_matmul = true;
      t.tp_overlap_rs_chunks = 0;
      t.tp_overlap_rs_tail = false;
      t.tp_overlap_rs_local_sum = true;
      t.pp_receive_buffer_per_micro_batch = true;
      break;
  }
  return t;
}

Count bytes_per_element(Dtype d) {
  switch (d) {
    case Dtype::FP8: return 1;
    case Dtype::BF16:
    case Dtype::FP16: return 2;
    default: return 4;
  }
}

int dp_for_gpus(const Layout& l, long long gpus) {
  const Count mp = l.model_parallel();
  if (mp <= 0 || gpus < mp || gpus % mp != 0)
    throw LayoutError("dp*tp*pp*cp = gpus", "tp*pp*cp = " + std::to_string(mp) + " does not divide " +
                                                std::to_string(gpus) + " GPUs");
  return int(gpus / mp);
}

std::string describe(const Layout& l) {
  std::string out;
  for (const LayoutField& f : layout_fields()) {
    const std::string part = f.brief ? f.brief(l) : std::string();
    if (!part.empty()) out += (out.empty() ? "" : " ") + part;
  }
  return out;
}

}  // namespace sixfold
