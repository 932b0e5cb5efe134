#pragma once
// The names each framework accepts, at the version configs/framework_keys/*.txt states (extracted
// from the frameworks' own sources by tools/extract_framework_keys.py), and the names of an export
// that are not among them.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace sixfold::test {

inline const std::set<std::string>& framework_names(const std::string& file) {
  static std::map<std::string, std::set<std::string>> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  std::ifstream in(std::string(SIXFOLD_SOURCE_DIR) + "/configs/framework_keys/" + file);
  const std::string missing = "configs/framework_keys/" + file + " is missing";
  REQUIRE_MESSAGE(in.good(), missing);
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') names.insert(line);
  REQUIRE(names.size() > 50);
  return cache.emplace(file, std::move(names)).first->second;
}

// Every --flag of a Megatron export (comment lines skipped) that arguments.py does not define.
inline std::vector<std::string> unknown_megatron_flags(const std::string& text, int* count = nullptr) {
  const auto& known = framework_names("megatron-lm.txt");
  std::vector<std::string> unknown;
  std::istringstream lines(text);
  std::string line, word;
  int n = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("#", 0) == 0) continue;
    std::istringstream words(line);
    while (words >> word)
      if (word.rfind("--", 0) == 0) {
        ++n;
        if (!known.count(word)) unknown.push_back(word);
      }
  }
  if (count) *count = n;
  return unknown;
}

// Every key path of a DeepSpeed JSON ("zero_optimization.stage") DeepSpeed does not define.
inline std::vector<std::string> unknown_deepspeed_keys(const std::string& text, int* count = nullptr) {
  const auto& known = framework_names("deepspeed.txt");
  std::vector<std::string> unknown;
  int n = 0;
  const nlohmann::json doc = nlohmann::json::parse(text);  // items() must not outlive it
  for (const auto& [key, value] : doc.items()) {
    ++n;
    if (!known.count(key)) unknown.push_back(key);
    if (value.is_object())
      for (const auto& [inner, v] : value.items()) {
        ++n;
        if (!known.count(key + "." + inner)) unknown.push_back(key + "." + inner);
      }
  }
  if (count) *count = n;
  return unknown;
}

// Every section.key of a torchtitan TOML its JobConfig does not define.
inline std::vector<std::string> unknown_torchtitan_keys(const std::string& text, int* count = nullptr) {
  const auto& known = framework_names("torchtitan.txt");
  std::vector<std::string> unknown;
  std::istringstream lines(text);
  std::string line, section;
  int n = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == ' ' || line[0] == ']') continue;  // inside a multi-line array
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::string key = section + "." + line.substr(0, line.find(' '));
    ++n;
    if (!known.count(key)) unknown.push_back(key);
  }
  if (count) *count = n;
  return unknown;
}

}  // namespace sixfold::test
