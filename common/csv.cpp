#include "common/csv.hpp"

#include <set>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/parse.hpp"

namespace sixfold {

int CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return int(i);
  return -1;
}

const std::string& CsvTable::field(size_t row, const std::string& name) const {
  static const std::string empty;
  const int c = column(name);
  if (c < 0 || size_t(c) >= rows[row].size()) return empty;
  return rows[row][c];
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable t;
  t.source = source;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, record_line = 1;
  auto end_record = [&] {
    record.push_back(field);
    field.clear();
    if (t.header.empty()) {
      // A header names each column once: with two 'gpus' columns, which one a row means is a guess.
      std::set<std::string> names;
      for (const auto& name : record)
        if (!name.empty() && !names.insert(name).second)
          throw Error(source + ":" + std::to_string(record_line) + ": column '" + name + "' appears twice in the header");
      t.header = record;
    } else if (!(record.size() == 1 && record[0].empty())) {
      if (record.size() != t.header.size())
        throw Error(source + ":" + std::to_string(record_line) + ": " + std::to_string(record.size()) +
                    " fields, the header has " + std::to_string(t.header.size()));
      if (t.rows.size() >= size_t(limits::kCsvRows))
        throw Error(source + ": more than " + std::to_string(limits::kCsvRows) + " rows");
      t.rows.push_back(record);
      t.row_lines.push_back(record_line);
    }
    record.clear();
    record_line = line;
  };
  // A UTF-8 byte order mark (spreadsheets write one) is not part of the first column's name.
  const size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    any = true;
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') { field += '"'; ++i; }
        else quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') quoted = true;
    else if (c == ',') {
      record.push_back(field);
      field.clear();
      if (record.size() >= size_t(limits::kCsvColumns))
        throw Error(source + ":" + std::to_string(record_line) + ": more than " + std::to_string(limits::kCsvColumns) +
                    " fields in a record");
    }
    else if (c == '\n') { ++line; end_record(); }
    else if (c != '\r') field += c;
  }
  if (quoted) throw Error(source + ":" + std::to_string(record_line) + ": unterminated quoted field");
  if (any && (!field.empty() || !record.empty())) end_record();
  if (t.header.empty()) throw Error(source + ": empty CSV file");
  return t;
}

CsvTable read_csv(const std::string& path) {
  return parse_csv(read_text_file(path, limits::kCsvFileBytes, "CSV files"), path);
}

}  // namespace sixfold
