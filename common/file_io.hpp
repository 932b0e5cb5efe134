#pragma once
// Reading inputs with a size limit, and writing outputs so that a failed command leaves the old
// file or none: the text goes to a temporary file in the same folder, is flushed and closed with
// every error checked, and is renamed over the target only then.
#include <cstddef>
#include <string>

namespace sixfold {

// The whole file, or Error "cannot open 'PATH': REASON" / "'PATH' is larger than LIMIT (the
// limit for WHAT)". Reads at most max_bytes + 1 bytes, so /dev/zero or a huge file ends quickly.
std::string read_text_file(const std::string& path, std::size_t max_bytes, const std::string& what);

// Writes `text` to `path` atomically (temporary file + rename). A path that exists and is not a
// regular file (/dev/stdout, a pipe, /dev/full) is written in place, every error still checked.
// Throws Error "cannot write 'PATH': REASON" and removes the temporary file on any failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace sixfold
