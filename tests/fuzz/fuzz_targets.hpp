#pragma once
// The bodies of the libFuzzer targets (tests/fuzz/fuzz_*.cpp), callable from the regression test
// too: each reads one input in one format and must either succeed or throw sixfold::Error; any
// other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sixfold::fuzz {

using Target = void (*)(const std::string& input);

void plan_yaml(const std::string& input);       // scenario/plan YAML -> scenario, layout check, prediction
void model_yaml(const std::string& input);      // zoo model YAML -> spec, parameters, step program
void hardware_yaml(const std::string& input);   // hardware profile YAML, and the same text as a cluster YAML
void hf_config(const std::string& input);       // Hugging Face config.json
void validation_csv(const std::string& input);  // validation CSV, read
// Validation CSV rows scored (small tables only). Not in tools/fuzz.sh's default list while
// simulator/fit/validation.cpp is being rewritten: a dp of 0 divides by zero there (see tests/fuzz/README.md).
void validation_rows(const std::string& input);
void kineto_trace(const std::string& input);    // PyTorch profiler trace, fitted to a profile
void cli_args(const std::string& input);        // one argument per line, run in-process

struct NamedTarget {
  const char* name;
  Target run;
};
const std::vector<NamedTarget>& targets();

}  // namespace sixfold::fuzz
