#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sixfold {

bool Progress::enabled() {
  const char* off = std::getenv("SIXFOLD_NO_PROGRESS");
  return isatty(STDERR_FILENO) == 1 && !(off && *off && std::string(off) != "0");
}

Progress::Progress(std::string label, size_t total) : label_(std::move(label)), total_(total), on_(enabled()) {
  if (on_) draw(0, true);
}

Progress::~Progress() {
  if (!on_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");  // back to the line's start, cleared
  std::fflush(stderr);
}

void Progress::set_total(size_t total) { total_ = total; }

void Progress::advance(size_t n) {
  const size_t done = done_ += n;
  if (on_) draw(done, false);
}

void Progress::draw(size_t done, bool force) {
  std::unique_lock<std::mutex> lock(draw_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is drawing
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const size_t total = total_;
  constexpr int kWidth = 30;
  if (total > 0) {
    const double share = std::min(1.0, double(done) / double(total));
    const int filled = int(share * kWidth);
    std::fprintf(stderr, "\r%s [%s%s] %3d%% (%zu/%zu)", label_.c_str(), std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(kWidth - filled), '.').c_str(), int(100 * share), done, total);
  } else {
    std::fprintf(stderr, "\r%s ... %zu", label_.c_str(), done);
  }
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace sixfold
