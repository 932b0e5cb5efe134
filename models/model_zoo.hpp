#pragma once
// The model zoo: architectures compiled into the binary from models/zoo/NAME.yaml, zoo-style YAML
// files given by path, and Hugging Face config.json files (see models/hf_config.hpp).
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace sixfold {

// A built-in name ("llama3-8b"), a path to a zoo-style YAML file, or a path to a Hugging Face
// config.json (recognised by a .json extension or by a first non-blank character '{'), or a
// checkpoint folder holding a config.json.
// Unknown names throw UsageError listing the built-in names; malformed files throw Error naming
// the file, line and field. The result has passed validate_model().
ModelSpec load_model(const std::string& name_or_path);

// Parses a zoo-style YAML description; `source` names it in error messages and, when the text has
// no `name:`, gives the name (its file stem). Unknown fields are errors, so typos do not pass
// silently. Validates the result.
ModelSpec parse_model_yaml(const std::string& text, const std::string& source);

// Names of the built-in models, sorted.
std::vector<std::string> builtin_model_names();

// The `source:` citation of a built-in model ("" when it has none). Throws like load_model.
std::string builtin_model_source(const std::string& name);

}  // namespace sixfold
