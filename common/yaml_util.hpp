#pragma once
// Reading YAML with errors that name the file, the line and the field.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/units.hpp"

namespace sixfold {

// A YAML document together with the name of where it came from, for error messages.
struct YamlDoc {
  YAML::Node root;
  std::string source;  // file path, or "built-in models/zoo/x.yaml"
};

// Parses text; a syntax error becomes Error("SOURCE:LINE:COL: ...").
YamlDoc parse_yaml(const std::string& text, const std::string& source);
// Reads and parses a file; a missing file is an Error naming it.
YamlDoc load_yaml_file(const std::string& path);

// "SOURCE:LINE: field 'NAME': MESSAGE"
[[noreturn]] void yaml_field_error(const YamlDoc& doc, const YAML::Node& node, const std::string& field,
                                   const std::string& message);

// Typed access: `required` throws when the field is missing or of the wrong type.
template <typename T>
T required(const YamlDoc& doc, const YAML::Node& parent, const std::string& field) {
  YAML::Node n = parent[field];
  if (!n) yaml_field_error(doc, parent, field, "missing");
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    yaml_field_error(doc, n, field, "cannot read '" + YAML::Dump(n) + "' as the expected type");
  }
}

template <typename T>
T optional(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, const T& fallback) {
  YAML::Node n = parent[field];
  if (!n || n.IsNull()) return fallback;
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    yaml_field_error(doc, n, field, "cannot read '" + YAML::Dump(n) + "' as the expected type");
  }
}

// Sizes as users write them: "80GiB", "141GB", "25MB", "512KiB", "1e9", "4096".
// Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB) of 1000.
Bytes parse_size(const std::string& text);
// Rates: "900GB/s", "3.35TB/s", "50GB" (the /s optional).
BytesPerSec parse_rate(const std::string& text);
// "80.0 GiB" style for human output.
std::string format_gib(Bytes b, int decimals = 2);

}  // namespace sixfold
