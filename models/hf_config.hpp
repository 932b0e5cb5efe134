#pragma once
// Import of a Hugging Face transformers config.json into a ModelSpec.
// Supported model_type values: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gpt_neox,
// deepseek_v2, deepseek_v3. Field names follow transformers' configuration_*.py classes.
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace sixfold {

// The model_type values the importer understands, sorted.
const std::vector<std::string>& supported_hf_model_types();

// Parses config.json text. `source` names the file in errors; `name` becomes ModelSpec::name.
// Malformed JSON: Error "SOURCE:LINE:COL: malformed JSON ..."; a missing or mistyped field: Error
// naming the source and the field; an unsupported model_type: UsageError listing the supported ones.
// The result has passed validate_model().
ModelSpec parse_hf_config(const std::string& json_text, const std::string& source, const std::string& name);

// Reads a config.json. The model is named after the file's folder when the file is called
// config.json (".../Meta-Llama-3-8B/config.json" -> "Meta-Llama-3-8B"), else after its stem.
ModelSpec load_hf_config(const std::string& path);
// The model name a config file gives: its folder's name for .../NAME/config.json, else the file's stem.
std::string hf_model_name(const std::string& path);

}  // namespace sixfold
