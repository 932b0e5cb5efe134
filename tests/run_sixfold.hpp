#pragma once
// Runs the built `sixfold` binary (SIXFOLD_BINARY) with arguments and captures its exit code and
// its standard output and error together, for end-to-end CLI tests.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace sixfold::test {

struct CliResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Any shell command line: its exit code and what it writes to standard output (redirect stderr
// in the command to capture it too).
inline CliResult run_command(const std::string& cmd) {
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline CliResult run_sixfold(const std::string& args) {
  return run_command(std::string(SIXFOLD_BINARY) + " " + args + " 2>&1");
}

}  // namespace sixfold::test
