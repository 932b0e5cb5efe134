#pragma once
// The fields of a Layout, once: the key a plan file, the layout JSON and `plan --compare` use, the
// type and range of the value, how it reads from and writes to text, whether outputs leave it out
// at its default, how `describe` shows it, and its CLI option. The plan YAML reader and writer,
// layout_json, --compare, describe and the CLI's layout options walk this table; a new layout
// field is one more row here (and its exporters).
#include <string>
#include <string_view>
#include <vector>

#include "models/layout.hpp"

namespace sixfold {

enum class FieldType { Count, Flag, Text, Size };

struct LayoutField {
  const char* key;             // plan YAML, --compare, JSON (unless json_key)
  const char* json_key;        // nullptr: key
  const char* alias;           // another --compare key ("mbs"), or nullptr
  FieldType type;
  long long min, max;          // Count
  const char* allowed;         // Text: the allowed values, for messages
  // Reads a value written as text; throws UsageError naming `where`, the value and what is allowed.
  void (*set)(Layout& l, const std::string& text, const std::string& where);
  // The value: a Count's or Size's number, a Flag's 0/1 (number) or a Text's text (text).
  double (*number)(const Layout& l);
  std::string (*text)(const Layout& l);
  bool (*at_default)(const Layout& l);  // outputs leave the field out when true (nullptr: always written)
  // Its part of describe() ("tp=8", "sp"), "" when it adds nothing.
  std::string (*brief)(const Layout& l);
  const char* flag = nullptr;  // the CLI option (a Flag type: a switch), nullptr: none (dp is derived)
  const char* help = nullptr;
};

const std::vector<LayoutField>& layout_fields();
// By key or alias; nullptr when none.
const LayoutField* find_layout_field(std::string_view key);
// Every key and alias, for "unknown field" messages.
std::vector<std::string> layout_field_keys();

// "true", "yes", "on", "1" / "false", "no", "off", "0" (any case); UsageError otherwise.
bool parse_flag(const std::string& text, const std::string& where);

}  // namespace sixfold
