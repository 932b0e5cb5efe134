#include "common/yaml_util.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace sixfold {

YamlDoc parse_yaml(const std::string& text, const std::string& source) {
  try {
    return YamlDoc{YAML::Load(text), source};
  } catch (const YAML::Exception& e) {
    throw Error(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": malformed YAML: " + e.msg);
  }
}

YamlDoc load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_yaml(ss.str(), path);
}

void yaml_field_error(const YamlDoc& doc, const YAML::Node& node, const std::string& field,
                      const std::string& message) {
  std::string where = doc.source;
  if (node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
  throw Error(where + ": field '" + field + "': " + message);
}

namespace {
bool iequals(const std::string& a, const char* b) {
  std::string bb(b);
  if (a.size() != bb.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(bb[i])))
      return false;
  return true;
}

double parse_scaled(const std::string& text, const std::string& what) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw UsageError("cannot read " + what + " '" + text + "' (write e.g. 80GiB, 141GB, 25MB)");
  }
  std::string suffix = text.substr(pos);
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
  struct Unit {
    const char* name;
    double scale;
  };
  static const Unit units[] = {{"", 1},          {"B", 1},           {"KiB", kKiB},
                               {"MiB", kMiB},    {"GiB", kGiB},      {"TiB", kGiB * 1024},
                               {"KB", 1e3},      {"MB", 1e6},        {"GB", 1e9},
                               {"TB", 1e12},     {"K", 1e3},         {"M", 1e6},
                               {"G", 1e9}};
  for (const auto& u : units)
    if (iequals(suffix, u.name)) {
      // "GiB"/"GB" are case sensitive in spirit; iequals keeps "gib" working too.
      if (!(value >= 0) || !std::isfinite(value)) break;
      return value * u.scale;
    }
  throw UsageError("cannot read " + what + " '" + text +
                   "': unknown unit (allowed: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
}
}  // namespace

Bytes parse_size(const std::string& text) { return parse_scaled(text, "size"); }

BytesPerSec parse_rate(const std::string& text) {
  std::string t = text;
  if (t.size() > 2 && (t.substr(t.size() - 2) == "/s")) t = t.substr(0, t.size() - 2);
  return parse_scaled(t, "rate");
}

std::string format_gib(Bytes b, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, b / kGiB);
  return buf;
}

}  // namespace sixfold
