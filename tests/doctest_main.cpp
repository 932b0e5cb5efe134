// The test executables' main: doctest's, plus one rule. CTest runs each test case on its own with
// --test-case=NAME (doctest_discover_tests); a filter that matches no test case passes silently in
// doctest, so a test whose name CTest mangles (a ';' splits it into two tests) would never run.
// Here a --test-case filter that selects nothing is a failure.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

namespace {

int g_selected = -1;  // test cases that passed the filters in the last run; -1: no run ended

// A listener that only counts: doctest reports the number after the run.
struct SelectedCounter : doctest::IReporter {
  explicit SelectedCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override { g_selected = int(stats.numTestCasesPassingFilters); }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("sixfold_selected_counter", 1, SelectedCounter);

bool names_test_cases(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* flag : {"--test-case=", "-tc=", "--dt-test-case=", "--dt-tc="})
      if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases and the like
  if (result == 0 && names_test_cases(argc, argv) && g_selected == 0) {
    std::fprintf(stderr, "error: the --test-case filter selects no test case (a name with ';' is split by CTest)\n");
    return 1;
  }
  return result;
}
