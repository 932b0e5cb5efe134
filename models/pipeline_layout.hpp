#pragma once
// Megatron's custom pipeline layout (--pipeline-model-parallel-layout, Megatron-Core since 2025-05,
// megatron/core/transformer/pipeline_parallel_layer_layout.py; docs "Custom Pipeline Model
// Parallel Layout"): what each virtual pipeline stage builds, written as text. Stages are split by
// '|'; 'E' is the embedding, 't' a transformer layer, 'm' a multi-token-prediction layer, 'L' the
// loss (with the output head); `X*n` and `(...)*n` repeat; commas and spaces are cosmetic. Stage
// i = a * pp + b is virtual stage a of pipeline rank b, the order sixfold's chunks use
// (virtual_stage_layer_counts). DeepSeek-V3 on pp 16 x vpp 2: "Et*3|(tt|)*29,m|L".
#include <string>
#include <vector>

namespace sixfold {

struct PipelineStagePart {
  int layers = 0;          // 't'
  int mtp = 0;             // 'm'
  bool embedding = false;  // 'E'
  bool loss = false;       // 'L'
};

// The stages of a layout text, in Megatron's order. Throws UsageError naming `where`, the text,
// the position and what is allowed.
std::vector<PipelineStagePart> parse_pipeline_layout(const std::string& text, const std::string& where);

// The text of `stages`, equal runs of stages written "(...|)*k": parse_pipeline_layout's inverse.
std::string format_pipeline_layout(const std::vector<PipelineStagePart>& stages);

// The layout Megatron's DeepSeek-V3 recipes write where pp x vpp stages do not divide the layers
// (Megatron-LM examples/moe_recipes, Megatron-Bridge's deepseek_v3 recipe: "Et*4|(tttt|)*14tmL" for
// 61 layers on 16 stages): every stage in order takes ceil(layers / stages) layers until they run
// out, the embedding on the first stage, the loss on the last. "" when that leaves a stage before
// the last one empty (the text would not be the even split it stands for).
std::string front_loaded_pipeline_layout(int layers, int stages);

}  // namespace sixfold
