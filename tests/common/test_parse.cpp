// The one parser of numbers with units, the input and output file helpers, the CSV and YAML
// readers' structural checks and "did you mean" (issue #13 and #12).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/csv.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/parse.hpp"
#include "common/suggest.hpp"
#include "common/yaml_util.hpp"

using namespace sixfold;

namespace {
template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("counts: whole numbers within the flag's range, nothing else") {
  CHECK(parse_count("8", "--gpus", 1, 1024) == 8);
  CHECK(parse_count(" 64 ", "--gpus", 1, 1024) == 64);
  CHECK(parse_count("-0", "--zero", 0, 3) == 0);
  for (const char* bad : {"eight", "8.0", "1e3", "", "8x", "0x10", "+", "99999999999999999999"})
    CHECK_THROWS_AS(parse_count(bad, "--gpus", 1, 1024), UsageError);
  CHECK(message_of([] { parse_count("0", "--gpus", 1, 1024); }) == "--gpus: '0' is out of range (allowed: 1 to 1024)");
  CHECK(contains(message_of([] { parse_count("eight", "--gpus", 1, 1024); }), "'eight' is not a whole number"));
  CHECK(contains(message_of([] { parse_count("", "--gpus", 1, 1024); }), "--gpus: empty value"));
}

TEST_CASE("numbers: finite and in range") {
  CHECK(parse_number("0.25", "rotary_fraction", 0, 1) == doctest::Approx(0.25));
  CHECK(parse_number("1e-3", "x", 0, 1) == doctest::Approx(1e-3));
  for (const char* bad : {"nan", ".nan", "inf", ".inf", "-inf", "1.5", "0x1p3", "", "1,5"})
    CHECK_THROWS_AS(parse_number(bad, "x", 0, 1), UsageError);
}

TEST_CASE("sizes need a unit (binary and decimal), zero and negatives refused") {
  CHECK(parse_size("80GiB", "--mem-budget") == doctest::Approx(80.0 * kGiB));
  CHECK(parse_size("141GB", "--mem-budget") == doctest::Approx(141e9));
  CHECK(parse_size("25MB", "x") == doctest::Approx(25e6));
  CHECK(parse_size("512KiB", "x") == doctest::Approx(512 * 1024.0));
  CHECK(parse_size("4096B", "x") == 4096);
  CHECK(parse_size("0B", "x", true) == 0);
  const std::string bare = message_of([] { parse_size("70", "--mem-budget"); });
  CHECK(contains(bare, "--mem-budget: '70' has no unit"));
  CHECK(contains(bare, "GiB"));
  CHECK(contains(message_of([] { parse_size("0GiB", "--mem-budget"); }), "must be positive"));
  CHECK(contains(message_of([] { parse_size("-5GiB", "--mem-budget"); }), "must be positive"));
  CHECK(contains(message_of([] { parse_size("5 parsecs", "x"); }), "unknown unit 'parsecs'"));
  CHECK_THROWS_AS(parse_size("inf GiB", "x"), UsageError);
  CHECK_THROWS_AS(parse_size("1e30TiB", "x"), UsageError);
}

TEST_CASE("bandwidths: bytes and bits per second, a bare number or a size refused") {
  CHECK(parse_rate("50GB/s", "--network-bandwidth") == doctest::Approx(50e9));
  CHECK(parse_rate("400Gb/s", "x") == doctest::Approx(50e9));
  CHECK(parse_rate("400Gbps", "x") == doctest::Approx(50e9));
  CHECK(parse_rate("1GiB/s", "x") == doctest::Approx(kGiB));
  CHECK(parse_rate("3.35TB/s", "x") == doctest::Approx(3.35e12));
  CHECK(parse_rate("1e9B/s", "x") == doctest::Approx(1e9));
  const std::string bare = message_of([] { parse_rate("50", "--network-bandwidth"); });
  CHECK(contains(bare, "--network-bandwidth: '50' has no unit"));
  CHECK(contains(bare, "Gb/s"));
  CHECK(contains(message_of([] { parse_rate("50GB", "x"); }), "is a size, not a bandwidth"));
  CHECK(contains(message_of([] { parse_rate("-50GB/s", "--network-bandwidth"); }), "'-50GB/s' must be positive"));
  CHECK_THROWS_AS(parse_rate("0GB/s", "x"), UsageError);
}

TEST_CASE("durations: a bare number is seconds, units, range") {
  CHECK(parse_duration("5", "--timeout", 1, 100) == 5);
  CHECK(parse_duration("1.5ms", "x") == doctest::Approx(1.5e-3));
  CHECK(parse_duration("25us", "x") == doctest::Approx(25e-6));
  CHECK(parse_duration("2min", "x") == 120);
  for (const char* bad : {"0", "-1", "1e-9", "nan", "inf", "", "5 fortnights"})
    CHECK_THROWS_AS(parse_duration(bad, "--timeout", 1, 100), UsageError);
}

TEST_CASE("lists and checked arithmetic") {
  CHECK(split_list("1, 8,,64", "--gpus") == std::vector<std::string>{"1", "8", "64"});
  CHECK_THROWS_AS(split_list(",", "--gpus"), UsageError);
  std::string many;
  for (int i = 0; i < 300; ++i) many += "1,";
  CHECK_THROWS_AS(split_list(many, "--gpus"), UsageError);
  CHECK(checked_mul(1LL << 30, 4, "x") == (1LL << 32));
  CHECK_THROWS_AS(checked_mul(1LL << 40, 1LL << 40, "x"), Error);
  CHECK_THROWS_AS(checked_add(0x7fffffffffffffffLL, 1, "x"), Error);
}

TEST_CASE("did you mean: close names only") {
  CHECK(closest_name("lama3-8b", {"llama3-8b", "llama3-70b", "pythia-1.4b"}) == "llama3-8b");
  CHECK(closest_name("--tpp", {"--tp", "--pp", "--gpus"}) == "--tp");
  CHECK(closest_name("plna", {"plan", "predict", "run"}) == "plan");
  CHECK(closest_name("zzzzzz", {"plan", "predict", "run"}).empty());
  CHECK(did_you_mean("h900", {"h100-sxm-80g"}).empty());
}

TEST_CASE("input files: size limit, no endless read, a directory or a missing file is an error") {
  CHECK(contains(message_of([] { read_text_file("/dev/zero", 1 << 20, "YAML files"); }), "larger than 1 MiB"));
  CHECK(contains(message_of([] { read_text_file("/nonexistent/x.yaml", 1 << 20, "YAML files"); }),
                 "cannot open '/nonexistent/x.yaml'"));
  CHECK(contains(message_of([] { read_text_file("/tmp", 1 << 20, "YAML files"); }), "directory"));
  CHECK(contains(message_of([] { load_yaml_file("/dev/zero"); }), "larger than"));
}

TEST_CASE("output files: checked writes, atomically, a failed write leaves the old file") {
  CHECK(contains(message_of([] { write_text_file("/dev/full", "text"); }), "cannot write '/dev/full'"));
  CHECK(contains(message_of([] { write_text_file("/nonexistent-dir/plan.yaml", "text"); }), "cannot write"));
  const auto dir = std::filesystem::temp_directory_path() / "sixfold-write-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.txt").string();
  write_text_file(path, "old\n");
  write_text_file(path, "new\n");
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  CHECK(line == "new");
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
  // A folder that cannot take the temporary file: the old file stays as it was.
  if (geteuid() != 0) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    CHECK_THROWS_AS(write_text_file(path, "newer\n"), Error);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    std::ifstream again(path);
    std::getline(again, line);
    CHECK(line == "new");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("CSV: a byte order mark is skipped, duplicate columns and over-long records refused") {
  const CsvTable t = parse_csv("\xEF\xBB\xBFid,layers\nA,2\n", "bom.csv");
  CHECK(t.column("id") == 0);
  CHECK(t.field(0, "layers") == "2");
  CHECK(contains(message_of([] { parse_csv("id,gpus,gpus\nA,1,2\n", "dup.csv"); }), "column 'gpus' appears twice"));
  std::string wide = "id";
  for (int i = 0; i < 2000; ++i) wide += ",c" + std::to_string(i);
  CHECK(contains(message_of([&] { parse_csv(wide + "\n", "wide.csv"); }), "more than 1024 fields"));
}

TEST_CASE("YAML: duplicate keys, deep nesting and alias bombs refused with file and line") {
  CHECK(contains(message_of([] { parse_yaml("a: 1\nb: 2\na: 3\n", "dup.yaml"); }), "dup.yaml:3: field 'a': given twice"));
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  CHECK(contains(message_of([&] { parse_yaml(deep, "deep.yaml"); }), "nested deeper than"));
  std::string bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    const char prev = char(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  CHECK(contains(message_of([&] { parse_yaml(bomb, "bomb.yaml"); }), "more than 200000 YAML nodes"));
  const YamlDoc doc = parse_yaml("tp: 0\nf: .nan\n", "f.yaml");
  CHECK(message_of([&] { yaml_count(doc, doc.root, "tp", 1, 8, 1, "layout.tp"); }) ==
        "f.yaml:1: field 'layout.tp': '0' is out of range (allowed: 1 to 8)");
  CHECK(contains(message_of([&] { yaml_number(doc, doc.root, "f", 0, 1); }), "f.yaml:2: field 'f': '.nan' is not a finite number"));
}

TEST_CASE("streamed output: the file appears only on commit, and an abandoned writer leaves nothing") {
  const auto dir = std::filesystem::temp_directory_path() / "sixfold-stream-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  {
    FileWriter out(path);
    out.append("partial");
    // An exception on the way: the writer goes out of scope uncommitted.
  }
  CHECK(std::filesystem::is_empty(dir));
  write_text_file(path, "old\n");
  {
    FileWriter out(path);
    std::string big(3 << 20, 'x');  // larger than the buffer: written straight through
    out.append("[");
    out.append(big);
    for (int i = 0; i < 1000; ++i) out.append(",1");
    CHECK(std::filesystem::file_size(path) == 4);  // the old file, untouched while streaming
    out.append("]\n");
    out.commit();
  }
  CHECK(std::filesystem::file_size(path) == 1 + (3u << 20) + 2000 + 2);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
  FileWriter full("/dev/full");
  full.append("text");
  CHECK(contains(message_of([&] { full.commit(); }), "cannot write '/dev/full'"));
  std::filesystem::remove_all(dir);
}
