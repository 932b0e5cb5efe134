#include <algorithm>

#include "common/builtin_data.hpp"

namespace sixfold {

std::optional<std::string_view> builtin_text(std::string_view path) {
  for (const auto& f : builtin_files())
    if (path == f.path) return std::string_view(f.text);
  return std::nullopt;
}

std::vector<std::string> builtin_names(std::string_view folder) {
  std::vector<std::string> names;
  std::string prefix = std::string(folder) + "/";
  for (const auto& f : builtin_files()) {
    std::string_view p(f.path);
    if (p.substr(0, prefix.size()) != prefix) continue;
    auto rest = p.substr(prefix.size());
    if (rest.find('/') != std::string_view::npos) continue;
    auto dot = rest.rfind('.');
    names.emplace_back(rest.substr(0, dot));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sixfold
