#pragma once
// Flags whose values go through common/parse.hpp: counts within a range, sizes and bandwidths
// with units, durations. A bad value is a UsageError naming the flag, thrown while CLI11 parses
// (main catches it). Every option given with an empty value ("--gpus ''") is refused in main.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "common/parse.hpp"

namespace sixfold::cli {

// "--gpus" from "-g,--gpus".
std::string flag_name(const std::string& names);

template <typename Int>
CLI::Option* add_count(CLI::App& app, const std::string& names, std::optional<Int>& target, long long min, long long max,
                       const std::string& help) {
  const std::string flag = flag_name(names);
  return app.add_option_function<std::string>(
      names, [&target, flag, min, max](const std::string& text) { target = Int(parse_count(text, flag, min, max)); }, help);
}

CLI::Option* add_size(CLI::App& app, const std::string& names, std::optional<Bytes>& target, const std::string& help);
CLI::Option* add_rate(CLI::App& app, const std::string& names, std::optional<BytesPerSec>& target, const std::string& help);
CLI::Option* add_duration(CLI::App& app, const std::string& names, std::optional<Seconds>& target, Seconds min,
                          Seconds max, const std::string& help);
// A comma-separated list of counts, each within [min, max] (decide --gpus 1,8,64).
CLI::Option* add_count_list(CLI::App& app, const std::string& names, std::vector<int>& target, long long min, long long max,
                            const std::string& help);

}  // namespace sixfold::cli
