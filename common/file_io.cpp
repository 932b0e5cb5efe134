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
bool write_all(int fd, const std::string& text) {
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

void write_text_file(const std::string& path, const std::string& text) {
  if (path.empty()) throw Error("cannot write '': empty file name");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw Error("cannot write '" + path + "': it is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe: no rename possible; write in place and check every step.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot write '" + path + "': " + reason());
    const bool ok = write_all(fd, text);
    const std::string why = ok ? "" : reason();
    const bool closed = ::close(fd) == 0;
    if (!ok) throw Error("cannot write '" + path + "': " + why);
    if (!closed) throw Error("cannot write '" + path + "': " + reason());
    return;
  }
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = folder + "/." + base + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error("cannot write '" + path + "': " + reason() + " (creating a temporary file in " + folder + ")");
  auto fail = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    throw Error("cannot write '" + path + "': " + why);
  };
  if (!write_all(fd, text)) {
    const std::string why = reason();
    ::close(fd);
    fail(why);
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    const std::string why = reason();
    ::close(fd);
    fail(why);
  }
  // Keep the old file's permissions where there was one; a new file gets 0666 less the umask.
  mode_t mode = 0666;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  ::fchmod(fd, mode);
  if (::close(fd) != 0) fail(reason());
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(reason());
}

}  // namespace sixfold
