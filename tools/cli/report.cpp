#include "tools/cli/report.hpp"

#include "planner/planner.hpp"
#include "simulator/fit/error_band.hpp"
#include "simulator/io/prediction_json.hpp"

#include <unistd.h>

#include <cstdio>
#include <ostream>

namespace sixfold::cli {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
}  // namespace

bool stdout_is_terminal() { return isatty(fileno(stdout)) != 0; }

std::string format_seconds(Seconds s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.2f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}

std::string scenario_header(const Scenario& s) {
  return s.model.name + " on " + std::to_string(s.gpus) + " x " + s.hardware.name + " (" +
         std::to_string(s.hardware.gpus_per_node) + " per node" +
         (s.hardware.nvlink_domain > s.hardware.gpus_per_node
              ? ", " + std::to_string(s.hardware.nvlink_domain) + " per NVLink domain"
              : std::string()) +
         "), seq " + std::to_string(s.work.seq) +
         ", global batch " + std::to_string(s.work.global_batch) + ", " + to_string(s.work.dtype) +
         (s.work.mtp_layers > 0 ? ", " + std::to_string(s.work.mtp_layers) + " MTP depth(s)" : "") +
         (s.work.fp8_activation_input_store ? ", SwiGLU input stored in fp8" : "") +
         (s.work.compile ? ", torch.compile" : "") +
         (s.work.fsdp_float8_all_gather ? ", FSDP float8 all-gather" : "") +
         (s.work.fsdp1 && s.layout.zero == 3 ? ", FSDP1 (gathers in place, no copy-out)" : "") +
         (s.work.float8_recipe != Float8Recipe::Tensorwise ? ", float8 " + to_string(s.work.float8_recipe) : "") +
         (s.work.bf16_adam_moments ? ", bf16 Adam moments" : "") +
         (s.work.grad_reduce_in_bf16 ? ", gradients reduced in bf16" : "") +
         (!s.work.flash_attention ? ", unfused attention"
          : s.work.attention_kernel != AttentionKernel::Default ? ", attention " + to_string(s.work.attention_kernel)
                                                                : "") +
         (s.work.cross_entropy != CrossEntropy::Default ? ", " + to_string(s.work.cross_entropy) + " cross-entropy" : "") +
         (s.work.train_metric_passes > 0 ? ", " + std::to_string(s.work.train_metric_passes) + " metric passes" : "") +
         (!s.work.overlap_p2p_comm ? ", blocking pipeline sends" : "") +
         (s.work.overlap_moe_ep_comm ? ", MoE all-to-all overlapped" : "") +
         (s.work.deepep_dispatch ? ", DeepEP dispatch" : "") +
         (s.work.framework != Framework::Megatron ? ", as " + to_string(s.work.framework) + " runs it" : "");
}

std::string layout_summary(const Layout& l, const Workload& w, Count micro_batches) {
  return layout_line(l) + " (" + std::to_string(micro_batches) + (micro_batches == 1 ? " micro-batch" : " micro-batches") +
         (bf16_optimizer_runs(w, l) ? "; DeepSpeed's BF16_Optimizer: fp32 gradient accumulation" : "") + ")";
}

std::string layout_line(const Layout& l) {
  return describe(l) + " schedule=" + to_string(l.schedule) + " dp-overlap=" + to_string(l.dp_overlap) +
         (l.tp > 1 ? std::string(" tp-overlap=") + (l.tp_overlap ? "on" : "off") : std::string());
}

void print_prediction(std::ostream& out, const Prediction& p) {
  char line[160];
  std::snprintf(line, sizeof line, "%-28s %12s\n", "memory per GPU", "GiB");
  out << "\n" << line;
  for (const auto& [name, bytes] : p.memory.components()) {
    if (bytes <= 0) continue;
    std::snprintf(line, sizeof line, "  %-26s %12.2f\n", name.c_str(), bytes / kGiB);
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-26s %12.2f   (stage %d, the peak; allocated %.2f, reserved %.2f)\n", "total",
                p.peak_memory / kGiB, p.peak_stage, p.memory.allocated() / kGiB, p.memory.reserved() / kGiB);
  out << line;
  if (p.stage_memory.size() > 1) {
    std::snprintf(line, sizeof line, "\n%-8s %12s %12s %12s  %s\n", "stage", "allocated", "reserved", "total GiB", "peak moment");
    out << line;
    for (const MemoryBreakdown& s : p.stage_memory) {
      std::snprintf(line, sizeof line, "  %-6d %12.2f %12.2f %12.2f  %s\n", s.stage, s.allocated() / kGiB, s.reserved() / kGiB,
                    s.total() / kGiB, to_string(s.peak_moment).c_str());
      out << line;
    }
  }
  std::snprintf(line, sizeof line, "\n%-28s %12s %7s\n", "time per step", "seconds", "share");
  out << line;
  for (const auto& [name, s] : p.time.components()) {
    if (s <= 0) continue;
    std::snprintf(line, sizeof line, "  %-26s %12.4f %6.1f%%\n", name.c_str(), s, 100.0 * s / p.step_time);
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-26s %12.4f\n", "step", p.step_time);
  out << line;
  if (!p.compute_by_op_class.empty()) {
    out << "\ncompute by op class (the slowest stage, whole step, recompute included)\n";
    for (const auto& [name, s] : p.compute_by_op_class) {
      std::snprintf(line, sizeof line, "  %-26s %12.4f\n", name.c_str(), s);
      out << line;
    }
  }
  std::snprintf(line, sizeof line,
                "\nstep %s | %.0f tokens/s/GPU | %.1f TFLOP/s/GPU model, %.1f hardware | MFU %.1f%% | peak %.2f GiB\n",
                format_seconds(p.step_time).c_str(), p.tokens_per_s_per_gpu, p.tflops_model_per_gpu, p.tflops_hw_per_gpu,
                100 * p.mfu, p.peak_memory / kGiB);
  out << line;
}

void print_workload_notes(std::ostream& out, const Scenario& s) {
  if (s.work.fsdp_float8_all_gather && !fsdp_float8_gathers_apply(s.work, s.layout))
    out << "note: --fsdp-float8-all-gather changes nothing for this layout: FSDP shards, and gathers, only under "
           "zero 3 over dp x cp > 1\n";
  if (!s.model.learned_positions && s.model.max_seq > 0 && s.work.seq > s.model.max_seq)
    out << "note: seq " << s.work.seq << " is above " << s.model.name << "'s pretraining length " << s.model.max_seq
        << ": its rotary positions go past what it was trained at, as long-context training runs; priced as any "
           "sequence\n";
  // torchtitan refuses enable_async_tensor_parallel without training.compile (the inductor pass
  // makes the fusion): an eager async-TP run is not one torchtitan makes.
  if (s.work.framework == Framework::Torchtitan && s.layout.tp_overlap && !s.work.compile)
    out << "note: torchtitan runs async TP only on compiled blocks (it refuses enable_async_tensor_parallel without "
           "training.compile): this is priced with eager ops around it; add --compile to price the run torchtitan makes\n";
}

void print_memory_fit(std::ostream& out, const Prediction& p, const HardwareProfile& hw) {
  char line[512];
  switch (memory_fit(p, hw)) {
    case MemoryFit::Fits:
      // Fits, but within the memory model's own measured error of the GPU: the margin plan's
      // default budget keeps (planner/planner.hpp).
      if (p.peak_memory <= default_memory_budget(hw)) return;
      std::snprintf(line, sizeof line,
                    "note: %.2f GiB per GPU fits the GPU's %.2f GiB by less than sixfold's measured memory error (9 in "
                    "10 runs use at most %.1f%% more than predicted): `plan` keeps layouts under %.2f GiB\n",
                    p.peak_memory / kGiB, hw.memory_capacity / kGiB, 100 * kMemoryUnderPredictionMargin,
                    default_memory_budget(hw) / kGiB);
      break;
    case MemoryFit::OutOfMemory:
      std::snprintf(line, sizeof line,
                    "warning: out of memory: needs %.2f GiB per GPU for live tensors and what lives outside PyTorch's "
                    "allocator (%.2f GiB with the allocator's cache), the GPU has %.2f GiB\n",
                    memory_needed_to_run(p) / kGiB, p.peak_memory / kGiB, hw.memory_capacity / kGiB);
      break;
    case MemoryFit::AllocatorRetries:
      std::snprintf(line, sizeof line,
                    "warning: %.2f GiB per GPU with the allocator's cache, the GPU has %.2f GiB: the live tensors "
                    "(%.2f GiB with what lives outside the allocator) fit, but PyTorch's caching allocator will free its cache and "
                    "retry allocations (cudaMalloc retries), which is slower than this prediction\n",
                    p.peak_memory / kGiB, hw.memory_capacity / kGiB, memory_needed_to_run(p) / kGiB);
      break;
  }
  out << line;
}

void add_prediction_json(nlohmann::ordered_json& out, const Scenario& s, const Prediction& p, bool with_band,
                         const std::string& codebase) {
  const nlohmann::ordered_json priced = prediction_json(p);  // named: items() must not outlive it
  for (const auto& [k, v] : priced.items()) out[k] = v;
  nlohmann::ordered_json& prediction = out["prediction"];
  if (with_band) prediction["expected_error"] = expected_error_json(s, codebase);
  const Bytes budget = default_memory_budget(s.hardware);
  prediction["memory_fit"] = to_string(memory_fit(p, s.hardware));
  prediction["memory_budget_bytes"] = budget;
  prediction["within_memory_budget"] = p.peak_memory <= budget;
}

void print_expected_error(std::ostream& out, const Scenario& s, Seconds step_time, const std::string& codebase) {
  if (auto band = expected_error(builtin_residual_runs(), s.work.framework, s.hardware.name, s.gpus, codebase))
    out << "step " << format_seconds(step_time) << ", " << describe(*band) << "\n";
}

nlohmann::ordered_json scenario_json(const Scenario& s, bool with_layout) {
  nlohmann::ordered_json out;
  out["model"] = s.model.name;
  out["hardware"] = s.hardware.name;
  out["gpus"] = s.gpus;
  out["framework"] = to_string(s.work.framework);
  out["workload"] = workload_json(s.work);
  if (with_layout) out["layout"] = layout_json(s.layout);
  return out;
}

nlohmann::ordered_json expected_error_json(const Scenario& s, const std::string& codebase) {
  auto band = expected_error(builtin_residual_runs(), s.work.framework, s.hardware.name, s.gpus, codebase);
  if (!band) return nullptr;
  return {{"pct", band->pct}, {"runs", band->runs}, {"basis", band->basis}};
}

}  // namespace sixfold::cli
