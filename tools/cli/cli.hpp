#pragma once
// The whole command line, callable in-process (main, and the argument-vector fuzzer): parses
// argv, runs the subcommand and returns the exit code (0 success, 1 failure, 2 usage).
namespace sixfold::cli {

int run_cli(int argc, const char* const* argv);

}  // namespace sixfold::cli
