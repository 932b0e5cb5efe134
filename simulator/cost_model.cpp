#include "simulator/cost_model.hpp"

#include <algorithm>
#include <map>
#include <cmath>

#include "simulator/dp_traffic.hpp"
#include "simulator/op_list_cost.hpp"
#include "simulator/overlap_rules.hpp"

namespace sixfold {

std::vector<std::pair<std::string, Seconds>> TimeBreakdown::components() const {
  return {{"compute", compute - recompute}, {"recompute", recompute}, {"dispatch_overhead", dispatch_overhead}, {"tp_comm", tp_comm}, {"cp_comm", cp_comm},
          {"ep_comm", ep_comm},             {"pp_comm", pp_comm},     {"dp_comm", dp_comm}, {"bubble", bubble},
          {"optimizer", optimizer}};
}

StepFlops step_flops(const ModelSpec& m, const Workload& w, const Layout& l) {
  return step_flops(m, w, l.recompute, double(fully_recomputed_layers(m, l)) / std::max(1, m.layers));
}

StepFlops step_flops(const ModelSpec& m, const Workload& w, Recompute recompute, double recomputed_fraction) {
  const ParameterCounts pc = count_parameters(m);
  const double tokens = double(w.global_batch) * double(w.seq);
  // Matmul parameters a token passes through: everything active but embeddings and norms, plus
  // the LM head's matmul even when tied.
  const double norm = m.norm == NormKind::LayerNorm ? 2.0 * m.hidden : double(m.hidden);
  const double matmul = double(pc.active) - double(pc.embedding) - double(pc.lm_head) - double(pc.final_norm) -
                        2.0 * norm * m.layers + double(m.vocab) * double(m.hidden);
  const double attention_per_seq =
      2.0 * double(w.seq) * double(w.seq) * m.heads * double(m.q_head_dim() + m.v_head_dim()) * m.layers;
  double forward = 2.0 * tokens * matmul + double(w.global_batch) * attention_per_seq;
  // Each multi-token-prediction depth: a layer like the last (its norms excluded), the 2h -> h
  // projection and the output head again, and one layer's attention.
  if (w.mtp_layers > 0) {
    const bool moe_last = m.moe.enabled() && m.is_moe_layer(m.layers - 1);
    const double layer = double(pc.attention_per_layer) + double(moe_last ? pc.moe_per_layer_active : pc.dense_mlp_per_layer) -
                         2.0 * norm;
    const double per_depth = 2.0 * tokens * (layer + 2.0 * m.hidden * double(m.hidden) + double(m.vocab) * double(m.hidden)) +
                             double(w.global_batch) * attention_per_seq / m.layers;
    forward += w.mtp_layers * per_depth;
  }
  StepFlops f;
  f.model = 3.0 * forward;
  double attention = double(w.global_batch) * attention_per_seq;
  if (w.mtp_layers > 0) attention += w.mtp_layers * double(w.global_batch) * attention_per_seq / m.layers;
  f.causal_model = f.model - 3.0 * attention / 2;
  f.hardware = f.model;
  if (recompute == Recompute::Full) f.hardware += recomputed_fraction * forward;
  else if (recompute == Recompute::Selective) f.hardware += double(w.global_batch) * attention_per_seq;
  // Op-level selective recompute re-runs every other matmul of each layer: about half their FLOPs.
  else if (recompute == Recompute::SelectiveOp) f.hardware += tokens * (matmul - double(m.vocab) * double(m.hidden));
  return f;
}

LayerListCosts layer_list_costs(const ModelSpec&, const OpPricer& pricer, const Layout& l, const StepProgram& prog) {
  LayerListCosts c;
  for (size_t k = 0; k < ProgramParts::kLayerKinds; ++k) {
    const LayerProgram& lp = prog.parts->layer(k);
    if (lp.forward.empty()) continue;  // no MoE layers, or no partial recompute
    c.forward[k] = price_op_list(lp.forward, 0, pricer, l.tp_overlap);
    c.backward[k] = price_op_list(lp.backward, lp.recompute_ops, pricer, l.tp_overlap);
    overlap_ep(c.forward[k], c.backward[k], pricer, ep_overlap_unpaired_share(l, prog.micro_batches));
  }
  return c;
}

LayerOpCosts::Edges edge_costs(const OpPricer& pricer, const Layout& l, const StageProgram& st) {
  return {price_op_list(st.edges->pre_forward, 0, pricer, l.tp_overlap), price_op_list(st.edges->post_forward, 0, pricer, l.tp_overlap),
          price_op_list(st.edges->post_backward, 0, pricer, l.tp_overlap), price_op_list(st.edges->pre_backward, 0, pricer, l.tp_overlap)};
}

namespace {
LayerOpCosts price_layers(const ModelSpec& model, const OpPricer& pricer, const Layout& l, const StepProgram& prog) {
  LayerOpCosts c;
  static_cast<LayerListCosts&>(c) = layer_list_costs(model, pricer, l, prog);
  std::array<bool, 4> priced{};
  for (const StageProgram& st : prog.stages) {
    const size_t at = ProgramParts::edge_index(st.first, st.last);
    if (!priced[at]) c.by_place[at] = edge_costs(pricer, l, st), priced[at] = true;
  }
  return c;
}
}  // namespace

LayerOpCosts layer_costs(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                       const StepProgram& prog) {
  return price_layers(model, OpPricer::of(hw, l, work), l, prog);
}

std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& l, const StepProgram& prog) {
  const OpPricer pricer = OpPricer::of(hw, l, work);
  return stage_times(model, hw, work, l, prog, pricer, price_layers(model, pricer, l, prog));
}

std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& l, const StepProgram& prog, const LayerOpCosts& layers) {
  return stage_times(model, hw, work, l, prog, OpPricer::of(hw, l, work), layers);
}

std::vector<StageOps> stage_ops(const StepProgram& prog, const LayerOpCosts& layers) {
  std::vector<StageOps> out;
  out.reserve(prog.stages.size());
  for (size_t s = 0; s < prog.stages.size(); ++s) {
    const StageProgram& st = prog.stages[s];
    if (const size_t same = first_same_stage(prog, s); same < s) {
      out.push_back(out[same]);
      continue;
    }
    StageOps o;
    for (const LayerRun& run : layer_runs(prog, st)) {
      o.forward.add(layers.forward[run.kind], run.layers);
      o.backward.add(layers.backward[run.kind], run.layers);
    }
    const LayerOpCosts::Edges& edges = layers.edges(st);
    o.forward.add(edges.pre_forward, 1);
    o.forward.add(edges.post_forward, 1);
    o.backward.add(edges.post_backward, 1);
    o.backward.add(edges.pre_backward, 1);
    out.push_back(o);
  }
  return out;
}

std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& l, const StepProgram& prog, const OpPricer& pricer,
                                   const LayerOpCosts& layers, const std::vector<DpTraffic>* dp_by_stage) {
  return stage_times(model, hw, work, l, prog, pricer, stage_ops(prog, layers), dp_by_stage);
}

std::vector<StageTime> stage_times(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                   const Layout& l, const StepProgram& prog, const OpPricer& pricer,
                                   const std::vector<StageOps>& ops, const std::vector<DpTraffic>* dp_by_stage) {
  const FrameworkTraits fw = framework_traits(work.framework);
  const int v = l.virtual_stages();
  const Count m = prog.micro_batches;
  // Pipeline sends: each virtual chunk boundary sends forward and receives the gradient back
  // (every stage sends the same activation).
  const Seconds p2p_raw = l.pp > 1 && !prog.stages.empty() ? pricer.time(prog.stages.front().pp_send) : 0;

  std::vector<StageTime> out;
  out.reserve(prog.stages.size());
  // A stage's time follows from the work it runs; the middle stages of a pipeline mostly run the
  // same, so each distinct stage is priced once.
  for (const StageProgram& st : prog.stages) {
    if (const size_t same = first_same_stage(prog, size_t(st.stage)); same < size_t(st.stage)) {
      out.push_back(out[same]);
      continue;
    }
    const OpListCost& f = ops.at(size_t(st.stage)).forward;
    const OpListCost& b = ops.at(size_t(st.stage)).backward;

    StageTime s;
    Seconds p2p = p2p_raw;
    // Overlapped (p2p_overlapped): each transfer hides behind the next chunk's compute, paying
    // the hiding cost of any hidden communication (overlap::with_hiding_cost).
    if (p2p > 0 && p2p_overlapped(work, l)) {
      const Seconds chunk = std::min(f.duration(), b.duration()) / v;
      p2p = overlap::with_hiding_cost(p2p, chunk, hw.overlap_slowdown,
                                      [&](Seconds w) { return overlap::exposed_behind(p2p, w); });
    }
    const Seconds send_f = st.last ? 0 : v * p2p;
    const Seconds send_b = st.first ? 0 : v * p2p;
    s.forward = f.duration() + send_f;
    s.backward = b.duration() + send_b;
    s.compute = f.compute + b.compute;
    s.recompute = b.recompute;
    s.weight_grad = b.weight_grad;
    s.tp = f.tp_exposed + b.tp_exposed;
    s.cp = f.cp_exposed + b.cp_exposed;
    s.ep = f.ep + b.ep;
    s.pp = send_f + send_b;
    s.overhead = f.overhead + b.overhead;

    // Data-parallel traffic of this stage and how much of it the compute hides.
    const DpTraffic dp = dp_by_stage ? dp_by_stage->at(size_t(st.stage)) : dp_traffic(model, hw, work, l, st);
    // DeepSpeed's per-module ZeRO-3 fetches hold up the host in every forward and backward.
    if (l.zero == 3 && !dp.gather_once) {
      const Seconds host_f = dp.fetch_host, host_b = dp.backward_gather_passes * dp.fetch_host;
      s.forward += host_f;
      s.backward += host_b;
      s.overhead += host_f + host_b;
      // FSDP2's copy-out of what each gather brought, on the compute stream before the layers run.
      const Seconds copy_f = dp.gather_copy_out, copy_b = dp.backward_gather_passes * dp.gather_copy_out;
      s.forward += copy_f;
      s.backward += copy_b;
      s.gather_copy_out = copy_f + copy_b;
      s.compute += s.gather_copy_out;
    }
    // One micro-batch's backward as it runs, exposed TP/CP/EP communication included: the DP
    // stream keeps reducing while the compute stream waits on those (the simulator does the same).
    const Seconds window = b.duration();
    const double slow = hw.overlap_slowdown;
    // Each collective's exposed time with the cost of what it hides (overlap::with_hiding_cost).
    const Seconds reduce_cost =
        l.dp_overlap == DpOverlap::None
            ? dp.full_reduction
            : overlap::with_hiding_cost(dp.reductions_time(), window, slow,
                                        [&](Seconds w) {
                                          return overlap::exposed_grad_reduction(l.dp_overlap, dp.reductions_time(), w,
                                                                                 dp.reductions);
                                        }) +
                  dp.flatten_copy;
    // The updated parameters are gathered after the step; Megatron overlaps that with the next
    // forward, one bucket at a time, when DP overlap is on.
    s.post_step_gather =
        fw.overlap_param_gather && l.dp_overlap != DpOverlap::None
            ? overlap::with_hiding_cost(dp.param_gather, s.forward, slow,
                                        [&](Seconds w) { return overlap::exposed_param_gather(dp.param_gather, w, dp.reductions); })
            : dp.param_gather;
    const int layers = std::max(1, st.layers);
    switch (l.zero) {
      case 0: s.dp = reduce_cost; break;
      case 1: s.dp = reduce_cost + s.post_step_gather; break;
      case 2: s.dp = double(m) * reduce_cost + s.post_step_gather; break;  // reduced every micro-batch
      case 3: {
        const Seconds gather_b = dp.backward_gather_passes * dp.gather_pass;
        if (dp.synchronous) {  // every collective waits for the GPU and the GPU for it
          s.dp = double(m) * (dp.gather_pass + gather_b + dp.reductions_time());
          break;
        }
        const Seconds gather_f = overlap::with_hiding_cost(dp.gather_pass, f.compute, slow, [&](Seconds w) {
          return overlap::exposed_param_gather(dp.gather_pass, w, layers);
        });
        if (dp.gather_once) {
          // Gathered in the first forward and kept (and copied out once, FSDP2); gradients
          // accumulate unsharded and are reduce-scattered once, during the last backward.
          s.dp = gather_f + dp.gather_copy_out + overlap::with_hiding_cost(dp.reductions_time(), window, slow, [&](Seconds w) {
                   return overlap::exposed_grad_reduction(DpOverlap::PerLayer, dp.reductions_time(), w, dp.reductions);
                 });
          break;
        }
        // In the backward the parameter gathers and the gradient reduce-scatters share the same
        // link, so they hide behind the backward together, not each on its own.
        const Seconds backward = overlap::with_hiding_cost(gather_b + dp.reductions_time(), window, slow, [&](Seconds w) {
          return overlap::exposed_zero3_backward(l.dp_overlap, gather_b, dp.reductions_time(), w, layers);
        });
        s.dp = double(m) * (gather_f + backward) + overlap::zero3_step_tail(dp.reductions_time(), dp.reductions);
        break;
      }
    }
    s.optimizer = dp.optimizer;  // AdamW over this rank's shard (dp_ops' optimizer_step)
    out.push_back(s);
  }
  return out;
}

Seconds pipeline_time(const Layout& l, Count m, const std::vector<StageTime>& stages) {
  Seconds max_c = 0, sum_c = 0, max_zb = 0;
  for (const auto& s : stages) {
    const Seconds c = s.forward + s.backward;
    max_c = std::max(max_c, c);
    sum_c += c;
    max_zb = std::max(max_zb, c - 2 * s.weight_grad);
  }
  const double p = double(stages.size());
  switch (l.schedule) {
    case Schedule::GPipe:
    case Schedule::OneFOneB: return double(m - 1) * max_c + sum_c;
    case Schedule::Interleaved: {
      const double v = l.vpp;
      return double(m - 1) * max_c + sum_c / v + (1.0 - 1.0 / v) * max_c;
    }
    case Schedule::ZeroBubble:
      // ZB-H1 (Qi et al. 2024): weight-gradient passes fill the bubble, leaving (p-1)(F + B - W).
      return double(m) * max_c + (p - 1) * std::max(0.0, max_zb);
  }
  return 0;
}

std::vector<MemoryBreakdown> predict_memory(const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                                            const Layout& layout, const StepProgram& program) {
  return stage_memory(model, hw, work, layout, program);
}

Prediction predict(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& layout) {
  return predict(model, hw, work, layout, expand_step_program(model, layout, work));
}

Prediction predict(const ModelSpec& model, const HardwareProfile& hw, const Workload& work, const Layout& l,
                   const StepProgram& prog) {
  Prediction p;
  p.micro_batches = prog.micro_batches;
  p.stage_memory = stage_memory(model, hw, work, l, prog);
  for (const auto& mb : p.stage_memory)
    if (mb.total() > p.peak_memory) {
      p.peak_memory = mb.total();
      p.peak_stage = mb.stage;
      p.memory = mb;
    }
  p.stage_time = stage_times(model, hw, work, l, prog);
  const Count m = prog.micro_batches;
  const Seconds pipe = pipeline_time(l, m, p.stage_time);
  size_t slow = 0;
  Seconds dp = 0, opt = 0;
  for (size_t i = 0; i < p.stage_time.size(); ++i) {
    const auto& s = p.stage_time[i];
    if (s.forward + s.backward > p.stage_time[slow].forward + p.stage_time[slow].backward) slow = i;
    dp = std::max(dp, s.dp);
    opt = std::max(opt, s.optimizer);
  }
  const StageTime& b = p.stage_time[slow];
  {
    const OpPricer pricer = OpPricer::of(hw, l, work);
    const StageProgram& st = prog.stages[slow];
    std::map<OpClass, Seconds> by_class;
    auto add = [&](const std::vector<Op>& ops, double times) {
      for (const Op& op : ops)
        if (op.kind != OpKind::Collective && op.kind != OpKind::PointToPoint) by_class[op.op_class] += times * pricer.time(op);
    };
    const double m = double(prog.micro_batches);
    for (const LayerRun& run : layer_runs(prog, st)) {
      add(run.program->forward, m * run.layers);
      add(run.program->backward, m * run.layers);
    }
    for (const auto* ops : {&st.edges->pre_forward, &st.edges->pre_backward, &st.edges->post_forward, &st.edges->post_backward}) add(*ops, m);
    // FSDP2's gather copy-out runs on the compute stream with the layers (stage_times).
    if (b.gather_copy_out > 0) by_class[OpClass::Elementwise] += m * b.gather_copy_out;
    for (const auto& [c, s] : by_class) p.compute_by_op_class.emplace_back(to_string(c), s);
  }
  TimeBreakdown& t = p.time;
  t.compute = double(m) * b.compute;
  t.recompute = double(m) * b.recompute;
  t.tp_comm = double(m) * b.tp;
  t.cp_comm = double(m) * b.cp;
  t.ep_comm = double(m) * b.ep;
  t.pp_comm = double(m) * b.pp;
  t.dispatch_overhead = double(m) * b.overhead;
  t.bubble = std::max(0.0, pipe - double(m) * (b.forward + b.backward));
  t.dp_comm = dp;
  t.optimizer = opt;
  t.step = pipe + dp + opt;
  p.step_time = t.step;
  set_throughput(p, model, hw, work, l);
  return p;
}

Bytes memory_needed_to_run(const Prediction& p) {
  if (p.stage_memory.empty()) return p.peak_memory;
  Bytes needed = 0;
  for (const MemoryBreakdown& m : p.stage_memory) needed = std::max(needed, m.allocated() + m.outside_allocator);
  return needed;
}

MemoryFit memory_fit(const Prediction& p, const HardwareProfile& hw) {
  if (memory_needed_to_run(p) > hw.memory_capacity) return MemoryFit::OutOfMemory;
  return p.peak_memory > hw.memory_capacity ? MemoryFit::AllocatorRetries : MemoryFit::Fits;
}

std::string to_string(MemoryFit f) {
  switch (f) {
    case MemoryFit::Fits: return "fits";
    case MemoryFit::AllocatorRetries: return "allocator_retries";
    case MemoryFit::OutOfMemory: return "out_of_memory";
  }
  return "?";
}

void set_throughput(Prediction& p, const ModelSpec& model, const HardwareProfile& hw, const Workload& work,
                    const Layout& l) {
  const int gpus = l.gpus();
  const StepFlops flops = step_flops(model, work, l);
  p.tokens_per_s_per_gpu = double(work.global_batch) * double(work.seq) / p.step_time / gpus;
  p.tflops_model_per_gpu = flops.model / p.step_time / gpus / kTera;
  p.tflops_hw_per_gpu = flops.hardware / p.step_time / gpus / kTera;
  p.mfu = p.tflops_model_per_gpu * kTera / hw.peak(work.dtype);
}

}  // namespace sixfold
