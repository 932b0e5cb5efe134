#pragma once
// Data files compiled into the binary (see cmake/embed_data.cmake): the model zoo, hardware
// profiles, clusters and scenarios. Paths are relative to the source root.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sixfold {

struct BuiltinFile {
  const char* path;
  const char* text;
};

const std::vector<BuiltinFile>& builtin_files();

// Text of a built-in file, if there is one at that path.
std::optional<std::string_view> builtin_text(std::string_view path);

// Names (file stems, sorted) of the built-in files under a folder, e.g. "models/zoo".
std::vector<std::string> builtin_names(std::string_view folder);

}  // namespace sixfold
