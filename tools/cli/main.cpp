// sixfold: plan, predict, simulate, run and validate LLM training layouts.
// Errors are thrown inside and caught here once: usage errors exit 2, failures exit 1.
#include <iostream>
#include <map>

#include "common/error.hpp"
#include "tools/cli/command.hpp"

namespace sixfold::cli {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace sixfold::cli

int main(int argc, char** argv) {
  using namespace sixfold;
  CLI::App app{"sixfold: lay out an LLM training run on a GPU cluster, and prove it on real GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sixfold 0.1");
  auto& commands = cli::registry();
  std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::map<CLI::App*, cli::Action> actions;
  try {
    for (auto& c : commands) {
      CLI::App* sub = app.add_subcommand(c.name, c.help);
      actions[sub] = c.setup(*sub);
    }
  } catch (const std::exception& e) {
    std::cerr << "sixfold: internal error while setting up commands: " << e.what() << "\n";
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const UsageError& e) {
    std::cerr << "sixfold: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sixfold: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
