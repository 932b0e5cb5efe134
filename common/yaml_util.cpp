#include "common/yaml_util.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/file_io.hpp"

namespace sixfold {

namespace {

// Walks every node once per path (aliases are visited again, so a billion-laughs document hits the
// node limit instead of taking forever); refuses duplicate keys.
void check_structure(const YamlDoc& doc, const YAML::Node& node, int depth, long& visited) {
  constexpr int kMaxDepth = 64;
  constexpr long kMaxNodes = 200000;
  if (++visited > kMaxNodes)
    throw Error(doc.source + ": more than " + std::to_string(kMaxNodes) + " YAML nodes (aliases counted each time they are used)");
  if (depth > kMaxDepth) {
    std::string where = doc.source;
    if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    throw Error(where + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  if (node.IsMap()) {
    std::set<std::string> keys;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) yaml_field_error(doc, kv.first, "?", "a key must be a plain name, not a list or mapping");
      const std::string key = kv.first.Scalar();
      if (!keys.insert(key).second) yaml_field_error(doc, kv.first, key, "given twice in the same mapping");
      check_structure(doc, kv.second, depth + 1, visited);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) check_structure(doc, item, depth + 1, visited);
  }
}

std::string field_path(const std::string& field, const std::string& path) { return path.empty() ? field : path; }

}  // namespace

YamlDoc parse_yaml(const std::string& text, const std::string& source) {
  YamlDoc doc;
  doc.source = source;
  try {
    doc.root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": malformed YAML: " + e.msg);
  }
  long visited = 0;
  check_structure(doc, doc.root, 0, visited);
  return doc;
}

YamlDoc load_yaml_file(const std::string& path) {
  return parse_yaml(read_text_file(path, limits::kConfigFileBytes, "YAML files"), path);
}

void yaml_field_error(const YamlDoc& doc, const YAML::Node& node, const std::string& field,
                      const std::string& message) {
  std::string where = doc.source;
  if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw Error(where + ": field '" + field + "': " + message);
}

long long yaml_count(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, long long min,
                     long long max, std::optional<long long> fallback, const std::string& path) {
  const std::string name = field_path(field, path);
  const YAML::Node n = parent[field];
  if (!n || n.IsNull()) {
    if (fallback) return *fallback;
    yaml_field_error(doc, parent, name, "missing");
  }
  return yaml_parse_scalar(doc, n, name, [&](const std::string& text) { return parse_count(text, name, min, max); });
}

double yaml_number(const YamlDoc& doc, const YAML::Node& parent, const std::string& field, double min, double max,
                   std::optional<double> fallback, const std::string& path) {
  const std::string name = field_path(field, path);
  const YAML::Node n = parent[field];
  if (!n || n.IsNull()) {
    if (fallback) return *fallback;
    yaml_field_error(doc, parent, name, "missing");
  }
  return yaml_parse_scalar(doc, n, name, [&](const std::string& text) { return parse_number(text, name, min, max); });
}

std::string format_gib(Bytes b, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, b / kGiB);
  return buf;
}

}  // namespace sixfold
