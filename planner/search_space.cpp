#include "planner/search_space.hpp"

#include "models/pipeline_layout.hpp"

#include <algorithm>
#include <tuple>

namespace sixfold {

namespace {

// Ascending divisors of n >= 1, in O(sqrt n) (64-bit loop bound: i * i never overflows).
std::vector<int> divisors(int n) {
  std::vector<int> low, high;
  for (long long i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      low.push_back(int(i));
      if (i * i != n) high.push_back(int(n / i));
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

bool contains(const std::vector<Schedule>& v, Schedule s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// Stage splits to try for a mesh: the even split, and for pp >= 3 the split that gives the first
// and last stage one layer less than the others, to balance the embedding and the LM head (Llama 3
// 405B: 126 layers on 16 stages as 7 + 14 x 8 + 7; Dubey et al. 2024, section 3.3.2).
std::vector<std::pair<int, int>> stage_splits(const ModelSpec& m, int pp, bool uneven, int mtp_layers) {
  std::vector<std::pair<int, int>> out = {{0, 0}};
  if (!uneven || pp < 2) return out;
  const int base = (m.layers + pp - 1) / pp;
  // Multi-token prediction puts about two layers' work per depth (its layer, the projection and a
  // second output head) on the last stage: try it lighter by up to that much.
  for (int d = 1; d <= 2 * mtp_layers && base - d >= 1; ++d) out.push_back({0, base - d});
  if (pp < 3) return out;
  const int light = base - 1;
  if (light < 1) return out;
  const int rest = m.layers - 2 * light;
  if (rest < pp - 2 || rest % (pp - 2) != 0) return out;
  if (rest / (pp - 2) == light) return out;  // the same as the even split
  out.push_back({light, light});
  return out;
}

}  // namespace

void restrict_to_framework(SearchOptions& o, Framework f) {
  auto drop = [](auto& v, auto pred) { v.erase(std::remove_if(v.begin(), v.end(), pred), v.end()); };
  // Block recompute is Megatron's (--recompute-method block): DeepSpeed's activation checkpointing
  // wraps every layer the model code checkpoints, and torchtitan's every n-th layer is another placement.
  if (f != Framework::Megatron) o.block_recompute = false;
  o.every_recompute = f == Framework::Torchtitan;
  // The zero-bubble schedule sixfold prices is ZB-H1, one stage per rank (Qi et al. 2024). It is not
  // in Megatron-LM (it lives in the sail-sg fork) nor in DeepSpeed's pipeline engine, and PyTorch's
  // pipelining (torchtitan) runs only interleaved ones (ScheduleInterleavedZeroBubble,
  // ScheduleZBVZeroBubble), which sixfold does not price: no framework's search has it.
  drop(o.schedules, [](Schedule s) { return s == Schedule::ZeroBubble; });
  // Megatron-LM pipelines run 1F1B or interleaved 1F1B (schedules.py); GPipe's all-forward order is not one.
  if (f == Framework::Megatron) drop(o.schedules, [](Schedule s) { return s == Schedule::GPipe; });
  // DeepSpeed's pipeline engine trains with TrainSchedule, 1F1B, and ZeRO-0/1 only (validate_layout).
  if (runs_deepspeed_engine(f)) {
    drop(o.schedules, [](Schedule s) { return s != Schedule::OneFOneB; });
    o.context_parallel = false;
  }
  if (f == Framework::Torchtitan) {
    drop(o.zero_stages, [](int z) { return z == 1 || z == 2; });
    drop(o.recompute, [](Recompute r) { return r == Recompute::Selective; });
    // FSDP2 and DDP always overlap the reduction with the backward.
    drop(o.dp_overlap, [](DpOverlap d) { return d == DpOverlap::None; });
  } else {
    drop(o.recompute, [](Recompute r) { return r == Recompute::SelectiveOp; });
    // Megatron-LM and DeepSpeed reduce gradients in buckets (--ddp-bucket-size, reduce_bucket_size)
    // or after the backward; a reduction per layer is FSDP's (torchtitan). Their exporters refuse it.
    drop(o.dp_overlap, [](DpOverlap d) { return d == DpOverlap::PerLayer; });
  }
}

void add_counts(PruneCounts& into, const PruneCounts& from) {
  for (const auto& [k, v] : from) into[k] += v;
}

Layout make_layout(const Mesh& mesh, const ProgramKey& key, const Variant& v) {
  Layout l;
  l.dp = mesh.dp;
  l.tp = mesh.tp;
  l.pp = mesh.pp;
  l.cp = mesh.cp;
  l.ep = mesh.ep;
  l.etp = mesh.etp;
  l.first_stage_layers = mesh.first_stage_layers;
  l.last_stage_layers = mesh.last_stage_layers;
  l.sp = key.sp;
  l.tp_overlap = mesh.tp_overlap && key.sp;
  l.micro_batch = key.micro_batch;
  l.recompute = key.recompute;
  l.recompute_modules = key.recompute_modules;
  l.recompute_num_layers = key.recompute_num_layers;
  l.recompute_every = key.recompute_every;
  l.zero = v.zero;
  l.dp_shard = v.dp_shard;
  l.dp_overlap = v.dp_overlap;
  l.schedule = v.schedule;
  l.vpp = v.vpp;
  if (v.accounts_pipeline_split) {
    l.first_stage_layers = l.last_stage_layers = 0;
    l.embedding_in_pipeline_split = l.loss_in_pipeline_split = true;
  }
  if (!v.pipeline_layout.empty()) {
    l.first_stage_layers = l.last_stage_layers = 0;
    l.pipeline_layout = v.pipeline_layout;
  }
  return l;
}

bool framework_overlaps_tp(const Workload& work, const SearchOptions& o) {
  return o.tp_overlap && (work.framework == Framework::Megatron ||
                          (work.framework == Framework::Torchtitan && work.compile));
}

std::vector<Mesh> enumerate_meshes(const ModelSpec& model, const Workload& work, int gpus, int scale_up_gpus,
                                   const SearchOptions& o, PruneCounts& pruned) {
  std::vector<Mesh> out;
  const int max_tp = o.max_tp > 0 ? o.max_tp : scale_up_gpus;
  for (int tp : divisors(gpus)) {
    if (tp > max_tp) { ++pruned["tp at most --max-tp (default: GPUs per NVLink domain)"]; continue; }
    if (model.heads % tp != 0) { ++pruned["tp divides heads"]; continue; }
    if (model.kv_heads % tp != 0 && tp % model.kv_heads != 0) {
      ++pruned["tp divides kv heads (or kv heads divide tp)"];
      continue;
    }
    for (int pp : divisors(gpus / tp)) {
      if (pp > model.layers) { ++pruned["pp at most the layers"]; continue; }
      for (int cp : divisors(gpus / tp / pp)) {
        if (cp > 1 && !o.context_parallel) { ++pruned["context parallelism the framework has"]; continue; }
        if (cp > 1 && work.seq % (2 * cp) != 0) { ++pruned["cp splits the sequence into 2*cp chunks"]; continue; }
        const int dp = gpus / tp / pp / cp;
        if (work.global_batch % dp != 0) { ++pruned["global batch divisible by dp"]; continue; }
        std::vector<Count> mbs;
        const Count per_replica = work.global_batch / dp;
        for (Count b = 1; b <= o.max_micro_batch && b <= per_replica; b *= 2)
          if (per_replica % b == 0) mbs.push_back(b);
        std::vector<std::pair<int, int>> eps;
        if (model.moe.enabled()) {
          for (int ep : divisors(model.moe.num_experts))
            for (int etp : divisors(tp)) {
              if ((Count(tp) * cp * dp) % (Count(ep) * etp) != 0) { ++pruned["ep*etp divides tp*cp*dp"]; continue; }
              eps.push_back({ep, etp});
            }
        } else {
          eps.push_back({1, 1});
        }
        for (auto [first, last] : stage_splits(model, pp, o.uneven_stages, work.mtp_layers))
          for (auto [ep, etp] : eps) {
            Mesh m;
            m.dp = dp; m.tp = tp; m.pp = pp; m.cp = cp; m.ep = ep; m.etp = etp;
            m.first_stage_layers = first;
            m.last_stage_layers = last;
            m.micro_batches = mbs;
            m.tp_overlap = tp > 1 && framework_overlaps_tp(work, o);
            if (o.hybrid_sharding && !model.moe.enabled() && Count(tp) * cp * dp > scale_up_gpus)
              for (int s : divisors(dp))
                if (s >= 2 && s < dp && Count(tp) * cp * s <= scale_up_gpus) m.node_shard = s;
            out.push_back(std::move(m));
          }
      }
    }
  }
  return out;
}

std::vector<RecomputePolicy> recompute_policies(const ModelSpec& model, const SearchOptions& o) {
  std::vector<RecomputePolicy> out;
  for (Recompute r : o.recompute) {
    if (r == Recompute::Selective)
      for (unsigned modules : selective_module_ladder(model)) out.push_back({r, modules, 0});
    else if (r == Recompute::Full && o.block_recompute) {
      // 1, 2, 3, 4, 6, 8, 12, 16, ...: every count of the few layers a virtual stage usually
      // holds, then steps of about x1.5.
      for (int p = 1; p < model.layers; p *= 2)
        for (int n : {p, p + p / 2})
          if (n < model.layers && (out.empty() || out.back().num_layers != n)) out.push_back({r, 0, n, 0});
      out.push_back({r, 0, 0, 0});
    } else if (r == Recompute::Full && o.every_recompute) {
      for (int k : {8, 6, 4, 3, 2})
        if (k <= model.layers) out.push_back({r, 0, 0, k});
      out.push_back({r, 0, 0, 0});
    } else
      out.push_back({r, 0, 0});
  }
  return out;
}

bool recomputes_subset(const RecomputePolicy& lighter, const RecomputePolicy& heavier) {
  enum Family { Nothing, SelectiveLadder, PartialFull, EveryLayer };
  auto family = [](const RecomputePolicy& p) {
    switch (p.recompute) {
      case Recompute::None: return Nothing;
      case Recompute::Selective:
      case Recompute::SelectiveOp: return SelectiveLadder;
      case Recompute::Full: return p.num_layers > 0 || p.every > 0 ? PartialFull : EveryLayer;
    }
    return EveryLayer;
  };
  const Family l = family(lighter), h = family(heavier);
  return l == Nothing || h == EveryLayer || l == h;
}

std::vector<ProgramKey> program_keys(const ModelSpec& model, const Workload& work, const Mesh& mesh,
                                     const SearchOptions& o, PruneCounts& pruned) {
  std::vector<ProgramKey> keys;
  std::vector<bool> sps;
  if (mesh.tp > 1) {
    if ((work.seq / mesh.cp) % mesh.tp == 0) sps.push_back(true);
    else ++pruned["tp divides the sequence under sp"];
    if (o.sp_off && work.framework == Framework::Torchtitan) ++pruned["torchtitan's tensor parallelism is sequence parallel"];
    else if (o.sp_off && !(model.moe.enabled() && work.framework == Framework::Megatron)) sps.push_back(false);
    else if (o.sp_off) ++pruned["Megatron runs MoE with tp > 1 only with sp"];
  } else {
    sps.push_back(false);
  }
  const auto policies = recompute_policies(model, o);
  for (Count b : mesh.micro_batches)
    for (bool sp : sps)
      for (size_t i = 0; i < policies.size(); ++i)
        keys.push_back({sp, b, policies[i].recompute, policies[i].modules, policies[i].num_layers, policies[i].every, int(i)});
  return keys;
}

std::vector<Variant> variants(const ModelSpec& model, const Workload& work, const Mesh& mesh, Count micro_batch,
                              const SearchOptions& o, PruneCounts& pruned) {
  std::vector<Variant> out;
  const bool data_parallel = mesh.dp * mesh.cp > 1;
  const Count m = work.global_batch / (Count(mesh.dp) * micro_batch);
  Layout probe;
  probe.pp = mesh.pp;
  probe.first_stage_layers = mesh.first_stage_layers;
  probe.last_stage_layers = mesh.last_stage_layers;
  const std::vector<int> stage_layers = stage_layer_counts(model, probe);
  const int max_stage = *std::max_element(stage_layers.begin(), stage_layers.end());

  // Schedules and virtual stages (and whether Megatron's embedding/loss-accounting split gives them).
  struct Choice {
    Schedule schedule;
    int vpp;
    bool accounts = false;
    std::string layout{};
  };
  // The custom layout that keeps each rank's layers (stage_layers) over v virtual stages.
  auto even_layout = [&](int v) {
    std::vector<PipelineStagePart> parts(size_t(mesh.pp) * size_t(v));
    for (int c = 0; c < v; ++c)
      for (int s = 0; s < mesh.pp; ++s)
        parts[size_t(c * mesh.pp + s)].layers = stage_layers[size_t(s)] / v + (c < stage_layers[size_t(s)] % v ? 1 : 0);
    parts.front().embedding = true;
    parts.back().loss = true;
    parts.back().mtp = work.mtp_layers;
    return format_pipeline_layout(parts);
  };
  std::vector<Choice> schedules;
  if (mesh.pp == 1) {
    schedules.push_back({.schedule = Schedule::OneFOneB, .vpp = 1});
    for (Schedule s : o.schedules)
      if (s != Schedule::OneFOneB) ++pruned["schedule irrelevant without pp"];
  } else {
    if (contains(o.schedules, Schedule::OneFOneB)) schedules.push_back({.schedule = Schedule::OneFOneB, .vpp = 1});
    if (contains(o.schedules, Schedule::GPipe)) {
      if (contains(o.schedules, Schedule::OneFOneB)) ++pruned["gpipe dominated by 1f1b (same time, more memory)"];
      else schedules.push_back({.schedule = Schedule::GPipe, .vpp = 1});
    }
    if (contains(o.schedules, Schedule::ZeroBubble)) schedules.push_back({.schedule = Schedule::ZeroBubble, .vpp = 1});
    if (contains(o.schedules, Schedule::Interleaved)) {
      if (m % mesh.pp != 0) {
        ++pruned["interleaved schedule needs micro-batches divisible by pp"];
      } else {
        bool any = false;
        // A mesh whose first and last stages hold one layer fewer than the rest is Megatron's
        // embedding/loss-accounting split, whose virtual stages need only (layers + 2) to divide.
        const int units = model.layers + 2;
        const bool accounting_mesh = work.framework == Framework::Megatron && units % mesh.pp == 0 &&
                                     mesh.first_stage_layers == units / mesh.pp - 1 &&
                                     mesh.last_stage_layers == units / mesh.pp - 1;
        std::vector<Choice> custom;
        for (int v = 2; v <= max_stage; ++v) {
          bool ok = true;
          // torchtitan splits unevenly (a layer per virtual stage is enough); Megatron needs equal ones.
          for (int c : stage_layers) ok = ok && (work.framework == Framework::Torchtitan ? c >= v : c % v == 0);
          if (ok) { schedules.push_back({.schedule = Schedule::Interleaved, .vpp = v}); any = true; }
          else if (accounting_mesh && units % (mesh.pp * v) == 0) {
            schedules.push_back({.schedule = Schedule::Interleaved, .vpp = v, .accounts = true});
            any = true;
          } else if (work.framework == Framework::Megatron && o.custom_pipeline_layouts && v <= kMaxCustomLayoutVpp &&
                     *std::min_element(stage_layers.begin(), stage_layers.end()) >= v) {
            custom.push_back({Schedule::Interleaved, v, false, even_layout(v)});
          }
        }
        // Only where no Megatron flag gives the mesh an interleave (DeepSeek-V3's 61 layers):
        // elsewhere its even and embedding/loss splits already offer one.
        if (!any && !custom.empty()) {
          schedules.insert(schedules.end(), custom.begin(), custom.end());
          any = true;
        }
        if (!any) ++pruned["vpp divides layers per stage"];
      }
    }
  }
  for (int zero : o.zero_stages) {
    if (zero > 0 && !data_parallel) { ++pruned["zero irrelevant without data parallelism"]; continue; }
    if (!pipeline_allows_zero(work.framework, mesh.pp, zero)) {
      ++pruned["DeepSpeed's pipeline engine runs ZeRO stage 0 or 1"];
      continue;
    }
    for (DpOverlap ov : o.dp_overlap) {
      if (!data_parallel && ov != DpOverlap::Bucketed) { ++pruned["dp overlap irrelevant without data parallelism"]; continue; }
      if (!pipeline_allows_dp_overlap(work.framework, mesh.pp, data_parallel, ov)) {
        ++pruned["DeepSpeed's pipeline engine reduces gradients after the backward"];
        continue;
      }
      // torchtitan's FSDP2 reduces per wrapped block (fully_shard per transformer block) and its
      // DDP (replicate) in PyTorch DDP's buckets: the other is not a torchtitan setting.
      if (data_parallel && work.framework == Framework::Torchtitan &&
          ((zero == 3 && ov == DpOverlap::Bucketed) || (zero == 0 && ov == DpOverlap::PerLayer))) {
        ++pruned["torchtitan reduces per layer under FSDP, in buckets under DDP"];
        continue;
      }
      for (const Choice& c : schedules) {
        out.push_back({zero, ov, c.schedule, c.vpp, c.accounts, c.layout});
        // Sharded within a node and replicated across nodes, where the framework runs that.
        if (mesh.node_shard > 0 && hybrid_sharding_allows(work.framework, zero))
          out.push_back({zero, ov, c.schedule, c.vpp, c.accounts, c.layout, mesh.node_shard});
      }
    }
  }
  // A request that disallowed bucketed overlap still needs one variant without data parallelism.
  if (!data_parallel && out.empty() && !o.dp_overlap.empty())
    for (const Choice& c : schedules)
      out.push_back({o.zero_stages.empty() ? 0 : o.zero_stages.front(), o.dp_overlap.front(), c.schedule, c.vpp, c.accounts, c.layout});
  return out;
}

std::vector<Layout> enumerate_layouts(const ModelSpec& model, const Workload& work, int gpus, int scale_up_gpus,
                                      const SearchOptions& o, PruneCounts& pruned) {
  std::vector<Layout> out;
  for (const Mesh& mesh : enumerate_meshes(model, work, gpus, scale_up_gpus, o, pruned)) {
    const auto keys = program_keys(model, work, mesh, o, pruned);
    for (Count b : mesh.micro_batches) {
      const auto vs = variants(model, work, mesh, b, o, pruned);
      for (const ProgramKey& k : keys) {
        if (k.micro_batch != b) continue;
        for (const Variant& v : vs) out.push_back(make_layout(mesh, k, v));
      }
    }
  }
  return out;
}

int complexity(const Layout& l) {
  return (l.tp > 1) + (l.pp > 1) + (l.vpp > 1) + (l.cp > 1) + (l.ep > 1) + (l.etp > 1) + l.sp + l.zero +
         int(l.recompute) + __builtin_popcount(l.recompute_modules & ~recompute_module::kCoreAttn) +
         (l.recompute_num_layers > 0) + (l.recompute_every > 0) +
         (l.schedule == Schedule::ZeroBubble) + (l.first_stage_layers > 0 || l.last_stage_layers > 0) +
         (l.shard_dp() < l.dp);
}

bool layout_less(const Layout& a, const Layout& b) {
  auto t = [](const Layout& l) {
    return std::make_tuple(l.tp, l.pp, l.cp, l.dp, l.ep, l.etp, l.vpp, int(l.schedule), l.sp, l.zero, l.shard_dp(), l.micro_batch,
                           int(l.recompute), l.recompute_modules, l.recompute_num_layers, l.recompute_every, int(l.dp_overlap), l.first_stage_layers, l.last_stage_layers,
                           l.bucket_bytes, l.tp_overlap);
  };
  return t(a) < t(b);
}

}  // namespace sixfold
