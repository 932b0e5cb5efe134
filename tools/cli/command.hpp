#pragma once
// Each subcommand lives in its own file and registers itself here: a name, and a function that
// adds its options to the CLI11 app and returns the action to run. The action returns the exit code.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace sixfold::cli {

using Action = std::function<int()>;
using Setup = std::function<Action(CLI::App&)>;

struct Command {
  std::string name;
  std::string help;
  Setup setup;
};

std::vector<Command>& registry();

struct Registrar {
  Registrar(std::string name, std::string help, Setup setup) {
    registry().push_back({std::move(name), std::move(help), std::move(setup)});
  }
};

}  // namespace sixfold::cli
