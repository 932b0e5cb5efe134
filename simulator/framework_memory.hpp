#pragma once
// Model states and buffers as each framework allocates them, per pipeline stage. Each term names the
// framework code it follows (file and commit), so that a change upstream is one place to look:
//
//   DeepSpeed   deepspeedai/DeepSpeed @ edaa722 (2026-08): deepspeed/runtime/zero/stage_1_and_2.py,
//               stage3.py, config.py (defaults)
//   Megatron    NVIDIA/Megatron-LM @ d98e8a6 (2026-08): megatron/core/distributed/
//               param_and_grad_buffer.py, megatron/training/arguments.py; TransformerEngine @ d0067d0:
//               transformer_engine/pytorch/module/base.py (initialize_ub)
//   torchtitan  FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch 2.5-2.8) as torchtitan's
//               parallelize_llama.py applies it: one group per transformer block, the root (embedding,
//               final norm, output head) a group of its own, MixedPrecisionPolicy(param_dtype=bf16,
//               reduce_dtype=fp32)
#include "models/step_program.hpp"

namespace sixfold {

// DeepSpeed's ZeRO defaults (deepspeed/runtime/zero/config.py @ edaa722): reduce_bucket_size 5e8,
// stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9, stage3_param_persistence_threshold
// 1e5, sub_group_size 1e9 elements.
inline constexpr double kDeepSpeedReduceBucket = 5e8;
inline constexpr double kDeepSpeedPrefetchBucket = 5e7;
inline constexpr double kDeepSpeedMaxLiveParameters = 1e9;
inline constexpr double kDeepSpeedPersistenceThreshold = 1e5;
inline constexpr double kDeepSpeedSubGroup = 1e9;

// TransformerEngine's userbuffers for TP communication overlap: initialize_ub creates one buffer of
// the layer input's global shape (seq x micro-batch, hidden) per overlapped GEMM method, 8 all-gather
// methods (fp8 buffers under fp8) and 4 reduce-scatter methods (base.py @ d0067d0,
// layers_all_gather_overlap / layers_reduce_scatter_overlap). Registered with cudaMalloc, outside
// PyTorch's allocator.
inline constexpr int kUserbufferAllGatherMethods = 8;
inline constexpr int kUserbufferReduceScatterMethods = 4;

// What one stage holds besides its activations, as its framework allocates it.
struct FrameworkStageMemory {
  // Held all step.
  Bytes weights = 0, gradients = 0, master_weights = 0, optimizer_states = 0;
  // Held while the backward runs: ZeRO-3/FSDP parameters gathered in flight (the largest module's
  // and the prefetched ones), DDP bucket copies, TP-comm-overlap userbuffers (outside the allocator).
  Bytes gathered_parameters = 0;
  Bytes communication_buffers = 0;
  Bytes userbuffers = 0;
  // Live only while one layer's backward runs (not during the loss's backward): the unsharded
  // gradient of that layer before its reduce-scatter (FSDP2: bf16 grad and its fp32 reduce-scatter
  // input; DeepSpeed ZeRO-3: the largest module's gradient).
  Bytes layer_gradient = 0;
  // Live only after the backward, when the activations are freed: DeepSpeed's fp32 copy of the
  // gradient partition in the optimizer step (stage_1_and_2.py step(); stage3.py
  // _prepare_fp32_grad_for_sub_group); torch.distributed.pipelining's merge of the last stage's
  // outputs at the end of step() (the kept outputs and their concatenation, with the receive
  // buffers that stay besides).
  Bytes optimizer_step = 0;
  // Held from each micro-batch's forward to the end of the step, beside the backward's working set:
  // the last stage's outputs where the pipeline keeps them (Workload::pp_keeps_stage_outputs).
  Bytes stage_outputs = 0;
};

FrameworkStageMemory framework_stage_memory(const ModelSpec& model, const Workload& work, const Layout& layout,
                                            const StepProgram& program, const StageProgram& stage);

// The largest module a ZeRO-3 rank gathers whole on this stage, in parameters: the embedding or
// output head where the stage has one, else the largest weight matrix of a layer (DeepSpeed gathers
// per nn.Module; estimate_zero3_model_states_mem_needs reserves 4 bytes for each of its parameters).
Count largest_module_params(const ModelSpec& model, const Layout& layout, const StageProgram& stage);

}  // namespace sixfold
