#pragma once
// Reading inputs with a size limit, and writing outputs so that a failed command leaves the old
// file or none: the text goes to a temporary file in the same folder, is flushed and closed with
// every error checked, and is renamed over the target only then.
#include <cstddef>
#include <string>
#include <string_view>

namespace sixfold {

// The whole file, or Error "cannot open 'PATH': REASON" / "'PATH' is larger than LIMIT (the
// limit for WHAT)". Reads at most max_bytes + 1 bytes, so /dev/zero or a huge file ends quickly.
std::string read_text_file(const std::string& path, std::size_t max_bytes, const std::string& what);

// Writes `text` to `path` atomically (temporary file + rename). A path that exists and is not a
// regular file (/dev/stdout, a pipe, /dev/full) is written in place, every error still checked.
// Throws Error "cannot write 'PATH': REASON" and removes the temporary file on any failure.
void write_text_file(const std::string& path, const std::string& text);
// Throws the Error FileWriter would where `path` cannot be written, writing nothing: for outputs
// that come at the end of long work (a run's trace), checked before the work starts.
void check_writable(const std::string& path);

// The same, streamed: for outputs too large to build in memory first (a Chrome trace of a big
// layout is hundreds of MB). Text is buffered and written as it comes; commit() makes the file
// appear at `path`; a writer destroyed without commit() (an exception on the way) removes its
// temporary file, so the target keeps its old content or stays absent.
class FileWriter {
 public:
  explicit FileWriter(const std::string& path);
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void append(std::string_view text);
  void commit();

 private:
  void flush();
  [[noreturn]] void fail(const std::string& why);

  std::string path_, tmp_;  // tmp_ empty: writing in place (a device or a pipe)
  int fd_ = -1;
  unsigned mode_ = 0666;
  std::string buffer_;
};

}  // namespace sixfold
