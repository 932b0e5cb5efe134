#include "common/parse.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace sixfold {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string show(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Quotes the text a user gave, shortened: a message must stay one line.
std::string quoted(const std::string& text) {
  std::string t;
  for (char c : text.substr(0, 60)) t += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return "'" + t + (text.size() > 60 ? "...'" : "'");
}

// The leading number of `text` (decimal or exponent notation, optional sign); `rest` gets what follows.
// False when there is no number or it is not finite.
bool leading_number(const std::string& text, double& value, std::string& rest) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  // strtod also reads "inf", "nan" and hexadecimal: only digits, sign, point and exponent here.
  size_t i = 0;
  if (t[i] == '+' || t[i] == '-') ++i;
  const size_t digits_start = i;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == digits_start) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    size_t j = i + 1;
    if (j < t.size() && (t[j] == '+' || t[j] == '-')) ++j;
    if (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) {
      while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      i = j;
    }
  }
  const std::string number = t.substr(0, i);
  char* end = nullptr;
  errno = 0;
  value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return false;
  rest = trim(t.substr(i));
  return true;
}

struct Unit {
  const char* name;
  double scale;
};

const Unit kSizeUnits[] = {{"B", 1},          {"KiB", kKiB},     {"MiB", kMiB},     {"GiB", kGiB},
                           {"TiB", kGiB * 1024}, {"KB", 1e3},     {"kB", 1e3},       {"MB", 1e6},
                           {"GB", 1e9},       {"TB", 1e12}};
constexpr const char* kSizeUnitList = "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB";
constexpr const char* kRateUnitList = "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, Mb/s, Gb/s, Tb/s, Gbps";

double scaled(const std::string& text, const std::string& what, const char* kind, const char* example,
              const Unit* units, size_t n_units, const char* unit_list, const std::string& unit) {
  for (size_t i = 0; i < n_units; ++i)
    if (unit == units[i].name) return units[i].scale;
  if (unit.empty())
    value_error(what, quoted(text) + " has no unit (a " + kind + " needs one, e.g. " + example + "; accepted: " +
                          unit_list + ")");
  value_error(what, "unknown unit '" + unit + "' in " + quoted(text) + " (accepted: " + unit_list + ")");
}

}  // namespace

void value_error(const std::string& what, const std::string& message) { throw UsageError(what + ": " + message); }

long long parse_count(const std::string& text, const std::string& what, long long min, long long max) {
  const std::string t = trim(text);
  const std::string range = "allowed: " + std::to_string(min) + " to " + std::to_string(max);
  if (t.empty()) value_error(what, "empty value (a whole number; " + range + ")");
  size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  if (i == t.size()) value_error(what, quoted(text) + " is not a whole number (" + range + ")");
  for (size_t j = i; j < t.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(t[j])))
      value_error(what, quoted(text) + " is not a whole number (" + range + ")");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno == ERANGE || v < min || v > max) value_error(what, quoted(text) + " is out of range (" + range + ")");
  return v;
}

double parse_number(const std::string& text, const std::string& what, double min, double max) {
  double v = 0;
  std::string rest;
  const std::string range = "allowed: " + show(min) + " to " + show(max);
  if (trim(text).empty()) value_error(what, "empty value (a number; " + range + ")");
  if (!leading_number(text, v, rest) || !rest.empty())
    value_error(what, quoted(text) + " is not a finite number (" + range + ")");
  if (v < min || v > max) value_error(what, quoted(text) + " is out of range (" + range + ")");
  return v;
}

Bytes parse_size(const std::string& text, const std::string& what, bool allow_zero) {
  double v = 0;
  std::string unit;
  if (trim(text).empty()) value_error(what, std::string("empty value (a size, e.g. 80GiB; accepted: ") + kSizeUnitList + ")");
  if (!leading_number(text, v, unit))
    value_error(what, "cannot read " + quoted(text) + " as a size (e.g. 80GiB, 141GB, 25MB; accepted: " +
                          kSizeUnitList + ")");
  const double scale = scaled(text, what, "size", "80GiB or 25MB", kSizeUnits, std::size(kSizeUnits), kSizeUnitList, unit);
  const double bytes = v * scale;
  if (v < 0 || (!allow_zero && v == 0))
    value_error(what, quoted(text) + " must be " + (allow_zero ? "zero or positive" : "positive"));
  if (!(bytes <= limits::kBytes)) value_error(what, quoted(text) + " is too large (at most 1 EiB)");
  return bytes;
}

BytesPerSec parse_rate(const std::string& text, const std::string& what) {
  double v = 0;
  std::string unit;
  if (trim(text).empty()) value_error(what, std::string("empty value (a bandwidth, e.g. 50GB/s; accepted: ") + kRateUnitList + ")");
  if (!leading_number(text, v, unit))
    value_error(what, "cannot read " + quoted(text) + " as a bandwidth (e.g. 50GB/s, 400Gb/s; accepted: " +
                          kRateUnitList + ")");
  // Bits per second: "Gb/s", "Gbps" (network links are sold so); bytes: "GB/s", "GiB/s".
  static const Unit kRateUnits[] = {{"B/s", 1},       {"KB/s", 1e3},      {"kB/s", 1e3},     {"MB/s", 1e6},
                                    {"GB/s", 1e9},    {"TB/s", 1e12},     {"KiB/s", kKiB},   {"MiB/s", kMiB},
                                    {"GiB/s", kGiB},  {"TiB/s", kGiB * 1024}, {"b/s", 1.0 / 8}, {"Kb/s", 1e3 / 8},
                                    {"kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8},
                                    {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8},  {"kbps", 1e3 / 8}, {"Mbps", 1e6 / 8},
                                    {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}};
  if (!unit.empty() && unit.find('/') == std::string::npos && unit.find("bps") == std::string::npos) {
    // "50GB": a size where a bandwidth is wanted.
    for (const Unit& u : kSizeUnits)
      if (unit == u.name)
        value_error(what, quoted(text) + " is a size, not a bandwidth (write " + trim(text) + "/s; accepted: " +
                              kRateUnitList + ")");
  }
  const double scale = scaled(text, what, "bandwidth", "50GB/s or 400Gb/s", kRateUnits, std::size(kRateUnits), kRateUnitList, unit);
  if (!(v > 0)) value_error(what, quoted(text) + " must be positive");
  const double rate = v * scale;
  if (!(rate <= limits::kRate)) value_error(what, quoted(text) + " is too large");
  return rate;
}

Seconds parse_duration(const std::string& text, const std::string& what, Seconds min_s, Seconds max_s) {
  double v = 0;
  std::string unit;
  const std::string range = "allowed: " + show(min_s) + " s to " + show(max_s) + " s";
  if (trim(text).empty()) value_error(what, "empty value (a duration, e.g. 5s, 1.5ms; " + range + ")");
  if (!leading_number(text, v, unit))
    value_error(what, "cannot read " + quoted(text) + " as a duration (e.g. 5s, 1.5ms, 25us; " + range + ")");
  static const Unit kDurationUnits[] = {{"", 1},      {"s", 1},        {"ms", 1e-3}, {"us", 1e-6},
                                        {"ns", 1e-9}, {"min", 60},     {"h", 3600}};
  double scale = -1;
  for (const Unit& u : kDurationUnits)
    if (unit == u.name) scale = u.scale;
  if (scale < 0) value_error(what, "unknown unit '" + unit + "' in " + quoted(text) + " (accepted: s, ms, us, ns, min, h)");
  const double s = v * scale;
  if (!(s >= min_s && s <= max_s)) value_error(what, quoted(text) + " is out of range (" + range + ")");
  return s;
}

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::string item;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      item = trim(item);
      if (!item.empty()) {
        if (out.size() >= size_t(limits::kListItems))
          value_error(what, "more than " + std::to_string(limits::kListItems) + " items");
        out.push_back(item);
      }
      item.clear();
    } else {
      item += text[i];
    }
  }
  if (out.empty()) value_error(what, "empty list");
  return out;
}

long long checked_mul(long long a, long long b, const std::string& what) {
  long long r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(what + ": " + std::to_string(a) + " x " + std::to_string(b) + " is too large");
  return r;
}

long long checked_add(long long a, long long b, const std::string& what) {
  long long r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " is too large");
  return r;
}

}  // namespace sixfold
