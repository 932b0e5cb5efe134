#include "common/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.hpp"

namespace sixfold {

namespace {

std::string reason() { return std::strerror(errno); }

std::string show_size(std::size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Writes all of `text` to fd; false (errno set) on any short or failed write.
bool write_all(int fd, std::string_view text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    left -= std::size_t(n);
  }
  return true;
}

}  // namespace

std::string read_text_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
  if (path.empty()) throw Error("cannot open '': empty file name");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "': " + reason());
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("cannot read '" + path + "': it is a directory");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = reason();
      ::close(fd);
      throw Error("cannot read '" + path + "': " + why);
    }
    if (n == 0) break;
    text.append(buf, std::size_t(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      throw Error("'" + path + "' is larger than " + show_size(max_bytes) + ", the limit for " + what);
    }
  }
  ::close(fd);
  return text;
}

FileWriter::FileWriter(const std::string& path) : path_(path) {
  if (path.empty()) throw Error("cannot write '': empty file name");
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) throw Error("cannot write '" + path + "': it is a directory");
  if (existed && !S_ISREG(st.st_mode)) {
    // A device or a pipe: no rename possible; write in place and check every step.
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error("cannot write '" + path + "': " + reason());
    return;
  }
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = folder + "/." + base + ".tmp-XXXXXX";
  fd_ = ::mkstemp(tmp.data());
  if (fd_ < 0) throw Error("cannot write '" + path + "': " + reason() + " (creating a temporary file in " + folder + ")");
  tmp_ = tmp;
  // Keep the old file's permissions where there was one; a new file gets 0666 less the umask.
  if (existed) {
    mode_ = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode_ = 0666 & ~mask;
  }
}

void check_writable(const std::string& path) {
  FileWriter probe(path);  // creates and, uncommitted, removes its temporary file
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void FileWriter::fail(const std::string& why) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw Error("cannot write '" + path_ + "': " + why);
}

void FileWriter::flush() {
  if (buffer_.empty()) return;
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': the writer has already failed or committed");
  if (!write_all(fd_, buffer_)) fail(reason());
  buffer_.clear();
}

void FileWriter::append(std::string_view text) {
  constexpr std::size_t kChunk = 1 << 20;
  if (buffer_.size() + text.size() < kChunk) {
    buffer_.append(text);
    return;
  }
  flush();
  if (text.size() < kChunk) {
    buffer_.append(text);
    return;
  }
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': the writer has already failed or committed");
  if (!write_all(fd_, text)) fail(reason());  // large: straight through, no copy
}

void FileWriter::commit() {
  flush();
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': the writer has already failed or committed");
  if (tmp_.empty()) {  // in place
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error("cannot write '" + path_ + "': " + reason());
    return;
  }
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail(reason());
  ::fchmod(fd_, mode_t(mode_));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(reason());
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(reason());
  tmp_.clear();
}

void write_text_file(const std::string& path, const std::string& text) {
  FileWriter out(path);
  out.append(text);
  out.commit();
}

}  // namespace sixfold
