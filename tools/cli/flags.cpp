#include "tools/cli/flags.hpp"

namespace sixfold::cli {

std::string flag_name(const std::string& names) {
  const auto comma = names.rfind(',');
  return comma == std::string::npos ? names : names.substr(comma + 1);
}

CLI::Option* add_size(CLI::App& app, const std::string& names, std::optional<Bytes>& target, const std::string& help) {
  const std::string flag = flag_name(names);
  return app.add_option_function<std::string>(
      names, [&target, flag](const std::string& text) { target = parse_size(text, flag); }, help);
}

CLI::Option* add_rate(CLI::App& app, const std::string& names, std::optional<BytesPerSec>& target, const std::string& help) {
  const std::string flag = flag_name(names);
  return app.add_option_function<std::string>(
      names, [&target, flag](const std::string& text) { target = parse_rate(text, flag); }, help);
}

CLI::Option* add_duration(CLI::App& app, const std::string& names, std::optional<Seconds>& target, Seconds min, Seconds max,
                          const std::string& help) {
  const std::string flag = flag_name(names);
  return app.add_option_function<std::string>(
      names, [&target, flag, min, max](const std::string& text) { target = parse_duration(text, flag, min, max); }, help);
}

CLI::Option* add_count_list(CLI::App& app, const std::string& names, std::vector<int>& target, long long min, long long max,
                            const std::string& help) {
  const std::string flag = flag_name(names);
  return app.add_option_function<std::string>(
      names,
      [&target, flag, min, max](const std::string& text) {
        target.clear();
        for (const auto& item : split_list(text, flag)) target.push_back(int(parse_count(item, flag, min, max)));
      },
      help);
}

}  // namespace sixfold::cli
