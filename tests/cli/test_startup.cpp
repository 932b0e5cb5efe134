// Commands that run no kernel start without the CUDA libraries (issue 12, "speed a user feels"):
// linking cuBLASLt alone cost every command 0.13 s and ~200 MiB before main(). The dynamic loader's
// own log (LD_DEBUG=libs) lists every library a process loads, so the test reads what actually
// happens, whichever way the binary was built.
#include <doctest/doctest.h>

#include <string>

#include "tests/run_sixfold.hpp"

namespace {

std::string loader_log(const std::string& args) {
  return sixfold::test::run_command("LD_DEBUG=libs " + std::string(SIXFOLD_BINARY) + " " + args + " 2>&1 >/dev/null").output;
}

}  // namespace

TEST_CASE("models, predict and plan do not load cuBLASLt") {
  for (const char* args : {"models", "predict --scenario default", "plan --scenario default --refine 0"}) {
    CAPTURE(args);
    const std::string log = loader_log(args);
    CHECK(log.find("calling init") != std::string::npos);  // the log is there at all
    CHECK(log.find("libcublasLt") == std::string::npos);
  }
}
