// Errors are thrown inside and caught here once: usage errors exit 2, failures exit 1. Under MPI
// a failing rank ends the whole job (abort_distributed_run), so that no peer hangs.
#include "tools/cli/cli.hpp"

#include <algorithm>
#include <iostream>
#include <map>

#include "common/error.hpp"
#include "common/suggest.hpp"
#include "executor/comm/communicator.hpp"
#include "tools/cli/command.hpp"

namespace sixfold::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

// "--tpp" -> " (did you mean '--tp'?)" among the options of `sub`.
std::string flag_hint(const CLI::App& sub, const std::string& arg) {
  std::string flag = arg.substr(0, arg.find('='));
  std::vector<std::string> names;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
    for (const auto& n : opt->get_snames()) names.push_back("-" + n);
  }
  return did_you_mean(flag, names);
}

int usage_error(const std::string& message) {
  std::cerr << "sixfold: error: " << message << "\n";
  return 2;
}

}  // namespace

int run_cli(int argc, const char* const* argv) {
  CLI::App app{"sixfold: lay out an LLM training run on a GPU cluster, and prove it on real GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sixfold 0.1");
  auto& commands = registry();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, Action> actions;
  std::vector<std::string> names;
  // Every option that takes a value refuses an empty one: "--gpus ''" is not "no --gpus".
  const CLI::Validator non_empty([](std::string& value) { return value.empty() ? std::string("empty value") : std::string(); },
                                 "", "non-empty");
  try {
    for (auto& c : commands) {
      CLI::App* sub = app.add_subcommand(c.name, c.help);
      actions[sub] = c.setup(*sub);
      names.push_back(c.name);
      for (CLI::Option* opt : sub->get_options())
        if (opt->get_expected_min() > 0) opt->check(non_empty);
    }
  } catch (const std::exception& e) {
    std::cerr << "sixfold: internal error while setting up commands: " << e.what() << "\n";
    return 1;
  }
  // A misspelt subcommand: say which was meant, not "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string hint = did_you_mean(argv[1], names);
    return usage_error("unknown command '" + std::string(argv[1]) + "'" + hint + " (commands: " + list + ")");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) {
        for (const auto& arg : sub->remaining())
          if (arg.size() > 1 && arg[0] == '-')
            return usage_error(sub->get_name() + ": unknown flag '" + arg.substr(0, arg.find('=')) + "'" + flag_hint(*sub, arg) +
                               "; see `sixfold " + sub->get_name() + " --help`");
        return usage_error(sub->get_name() + ": unexpected argument(s): " + e.what());
      }
    return usage_error(e.what());
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const UsageError& e) {  // a flag's value, from common/parse.hpp
    return usage_error(e.what());
  }
  int rc = 0;
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const UsageError& e) {
    std::cerr << "sixfold: error: " << e.what() << "\n";
    rc = 2;
  } catch (const std::exception& e) {
    std::cerr << "sixfold: error: " << e.what() << "\n";
    rc = 1;
  }
  if (rc != 0) {
    std::cerr.flush();
    std::cout.flush();
    abort_distributed_run(rc);
  }
  return rc;
}

}  // namespace sixfold::cli
