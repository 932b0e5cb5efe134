#pragma once
// Reading YAML with errors that name the file, the line and the field.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.hpp"
#include "common/parse.hpp"
#include "common/units.hpp"

namespace sixfold {

// A YAML document together with the name of where it came from, for error messages.
struct YamlDoc {
  YAML::Node root;
  std::string source;  // file path, or "built-in models/zoo/x.yaml"
};

// Parses text; a syntax error becomes Error("SOURCE:LINE:COL: ..."). A key given twice in one
// mapping, nesting deeper than 64 levels or more than 200000 nodes (aliases included) is an
// Error too: yaml-cpp would keep the first of two keys silently.
YamlDoc parse_yaml(const std::string& text, const std::string& source);
// Reads (at most limits::kConfigFileBytes) and parses a file; a missing file is an Error naming it.
YamlDoc load_yaml_file(const std::string& path);

// "SOURCE:LINE: field 'NAME': MESSAGE"
[[noreturn]] void yaml_field_error(const YamlDoc& doc, const YAML::Node& node, const std::string& field,
                                   const std::string& message);

// What a field of type T must hold, for messages.
template <typename T>
std::string yaml_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "true or false (allowed: true, false)";
  else if constexpr (std::is_integral_v<T>) return "a whole number";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "text";
  else return "the expected type";
}

// Typed access: `required` throws when the field is missing or of the wrong type.
template <typename T>
T required(const YamlDoc& doc, const YAML::Node& parent, const std::string& field) {
  YAML::Node n = parent[field];
  if (!n) yaml_field_error(doc, parent, field, "missing");
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    yaml_field_error(doc, n, field, "cannot read '" + YAML::Dump(n) + "' as " + yaml_type_name<T>());
  }
}

template <typename T>
T optional(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, const T& fallback) {
  YAML::Node n = parent[field];
  if (!n || n.IsNull()) return fallback;
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    yaml_field_error(doc, n, field, "cannot read '" + YAML::Dump(n) + "' as " + yaml_type_name<T>());
  }
}

// A whole number at parent[field] within [min, max] (common/parse.hpp's rules); a missing or null
// field gives `fallback`, or an error when there is none. `path` names the field in messages
// ("layout.tp"; default: field).
long long yaml_count(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, long long min,
                     long long max, std::optional<long long> fallback = std::nullopt, const std::string& path = "");
// A finite number at parent[field] within [min, max].
double yaml_number(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, double min, double max,
                   std::optional<double> fallback = std::nullopt, const std::string& path = "");
// Runs parse(text) on the scalar at `node`, turning its UsageError into a field error with the line.
template <typename Parse>
auto yaml_parse_scalar(const YamlDoc& doc, const YAML::Node& node, const std::string& path, Parse parse) {
  if (!node.IsScalar()) yaml_field_error(doc, node, path, "expected a single value, got " + YAML::Dump(node));
  try {
    return parse(node.Scalar());
  } catch (const UsageError& e) {
    std::string message = e.what();
    if (message.rfind(path + ": ", 0) == 0) message = message.substr(path.size() + 2);
    yaml_field_error(doc, node, path, message);
  }
}
// "80.0 GiB" style for human output.
std::string format_gib(Bytes b, int decimals = 2);

}  // namespace sixfold
