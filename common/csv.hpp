#pragma once
// A small RFC 4180 reader: quoted fields with commas, doubled quotes and newlines.
#include <map>
#include <string>
#include <vector>

namespace sixfold {

struct CsvTable {
  std::string source;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> row_lines;  // 1-based line of each row in the file, for messages

  int column(const std::string& name) const;  // -1 when absent
  // Field of a row by column name; "" when the column is absent.
  const std::string& field(size_t row, const std::string& name) const;
};

CsvTable read_csv(const std::string& path);
CsvTable parse_csv(const std::string& text, const std::string& source);

}  // namespace sixfold
