// The project's corrections of shared validation cells (data/validation/corrections.csv, applied by
// tools/refresh_validation.sh) hold in the copy that tests and `sixfold validate` read, and each
// says what the shared set had and why it changed.
#include <doctest/doctest.h>

#include <string>

#include "common/csv.hpp"

using namespace sixfold;

TEST_CASE("every correction of a shared validation cell is in the project's copy") {
  const std::string folder = std::string(SIXFOLD_DATA_DIR) + "/validation/";
  const CsvTable fixes = read_csv(folder + "corrections.csv");
  REQUIRE(fixes.rows.size() >= 1);
  for (size_t i = 0; i < fixes.rows.size(); ++i) {
    const std::string file = fixes.field(i, "file"), id = fixes.field(i, "id"), column = fixes.field(i, "column");
    INFO(file << " " << id << " " << column);
    CHECK(fixes.field(i, "source").size() > 40);  // a reason with its source, not a bare value
    CHECK(fixes.field(i, "shared_value") != fixes.field(i, "value"));
    const CsvTable data = read_csv(folder + file);
    REQUIRE(data.column(column) >= 0);
    bool found = false;
    for (size_t r = 0; r < data.rows.size(); ++r) {
      if (data.field(r, "id") != id) continue;
      found = true;
      CHECK(data.field(r, column) == fixes.field(i, "value"));
    }
    CHECK(found);
  }
}
