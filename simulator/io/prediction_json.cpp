#include "simulator/io/prediction_json.hpp"

#include "models/layout_fields.hpp"

#include <algorithm>

namespace sixfold {

nlohmann::ordered_json prediction_summary_json(const Prediction& p) {
  nlohmann::ordered_json j;
  j["step_time_s"] = p.step_time;
  j["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  j["tflops_model_per_gpu"] = p.tflops_model_per_gpu;
  j["tflops_hw_per_gpu"] = p.tflops_hw_per_gpu;
  j["mfu"] = p.mfu;
  j["peak_memory_bytes"] = p.peak_memory;
  j["peak_stage"] = p.peak_stage;
  Bytes allocated = 0, reserved = 0;
  for (const MemoryBreakdown& s : p.stage_memory) {
    allocated = std::max(allocated, s.allocated());
    reserved = std::max(reserved, s.reserved());
  }
  j["peak_allocated_bytes"] = allocated;
  j["peak_reserved_bytes"] = reserved;
  return j;
}

nlohmann::ordered_json prediction_json(const Prediction& p) {
  nlohmann::ordered_json j;
  j["prediction"] = prediction_summary_json(p);
  nlohmann::ordered_json mem;
  for (const auto& [name, bytes] : p.memory.components()) mem[name] = bytes;
  mem["total"] = p.memory.total();
  j["memory"] = mem;
  nlohmann::ordered_json time;
  for (const auto& [name, s] : p.time.components()) time[name] = s;
  time["step"] = p.time.step;
  j["time"] = time;
  nlohmann::ordered_json classes;
  for (const auto& [name, s] : p.compute_by_op_class) classes[name] = s;
  j["compute_by_op_class"] = classes;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < p.stage_memory.size(); ++i) {
    nlohmann::ordered_json s;
    const MemoryBreakdown& m = p.stage_memory[i];
    s["stage"] = i;
    s["allocated_bytes"] = m.allocated();
    s["reserved_bytes"] = m.reserved();
    s["memory_bytes"] = m.total();
    s["peak_moment"] = to_string(m.peak_moment);
    nlohmann::ordered_json components;
    for (const auto& [name, bytes] : m.components()) components[name] = bytes;
    s["components"] = components;
    if (i < p.stage_time.size()) {
      s["forward_s"] = p.stage_time[i].forward;
      s["backward_s"] = p.stage_time[i].backward;
    }
    stages.push_back(s);
  }
  j["stages"] = stages;
  return j;
}

nlohmann::ordered_json workload_json(const Workload& w) {
  nlohmann::ordered_json j;
  j["seq"] = w.seq;
  j["global_batch"] = w.global_batch;
  j["dtype"] = to_string(w.dtype);
  j["flash_attention"] = w.flash_attention;
  j["attention_kernel"] = to_string(attention_kernel_of(w));
  j["cross_entropy"] = to_string(cross_entropy_of(w));
  j["train_metric_passes"] = w.train_metric_passes;
  j["overlap_p2p_comm"] = w.overlap_p2p_comm;
  j["overlap_moe_expert_parallel_comm"] = w.overlap_moe_ep_comm;
  j["moe_enable_deepep"] = w.deepep_dispatch;
  j["framework"] = to_string(w.framework);
  j["adam_moments"] = w.bf16_adam_moments ? "bf16" : "fp32";
  j["grad_reduce_in_bf16"] = w.grad_reduce_in_bf16;
  j["activation_func_fp8_input_store"] = w.fp8_activation_input_store;
  j["mtp_num_layers"] = w.mtp_layers;
  j["compile"] = w.compile;
  j["enable_fsdp_float8_all_gather"] = w.fsdp_float8_all_gather;
  j["float8_recipe"] = to_string(w.float8_recipe);
  return j;
}

nlohmann::ordered_json layout_json(const Layout& l) {
  nlohmann::ordered_json j;
  for (const LayoutField& f : layout_fields()) {
    if (f.at_default && f.at_default(l)) continue;
    const char* key = f.json_key ? f.json_key : f.key;
    switch (f.type) {
      case FieldType::Count: j[key] = static_cast<long long>(f.number(l)); break;
      case FieldType::Flag: j[key] = f.number(l) != 0; break;
      case FieldType::Text: j[key] = f.text(l); break;
      case FieldType::Size: j[key] = f.number(l); break;  // bytes
    }
  }
  return j;
}

}  // namespace sixfold
