// Every input a fuzz run found (tests/fuzz/regressions/TARGET/*) goes through its target again:
// it must neither crash nor throw anything but sixfold::Error (and, in the sanitizer build of
// tools/sanitize.sh, trigger no ASan/UBSan report). The seed corpora run too.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/fuzz/fuzz_targets.hpp"

namespace fs = std::filesystem;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
int run_folder(const fs::path& folder, sixfold::fuzz::Target target) {
  int n = 0;
  if (!fs::is_directory(folder)) return 0;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (!e.is_regular_file()) continue;
    INFO(e.path().string());
    CHECK_NOTHROW(target(read_all(e.path())));
    ++n;
  }
  return n;
}
}  // namespace

TEST_CASE("fuzz findings and seeds run clean through their targets") {
  const fs::path root = fs::path(SIXFOLD_SOURCE_DIR) / "tests" / "fuzz";
  int inputs = 0;
  for (const auto& t : sixfold::fuzz::targets()) {
    inputs += run_folder(root / "regressions" / t.name, t.run);
    inputs += run_folder(root / "seeds" / t.name, t.run);
  }
  CHECK(inputs > 0);
}
