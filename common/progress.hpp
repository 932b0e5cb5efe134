#pragma once
// A progress bar on stderr for work a user waits on (plan's search, decide's table, validate's
// rows): drawn only when stderr is a terminal, at most ten times a second, and erased when the
// work is done, so a pipe, a file or a CI log never sees it. SIXFOLD_NO_PROGRESS=1 turns it off.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace sixfold {

class Progress {
 public:
  Progress(std::string label, size_t total = 0);
  ~Progress();  // erases the bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set_total(size_t total);
  void advance(size_t n = 1);  // thread-safe
  bool shown() const { return on_; }
  static bool enabled();       // stderr is a terminal and SIXFOLD_NO_PROGRESS is unset

 private:
  void draw(size_t done, bool force);
  std::string label_;
  std::atomic<size_t> total_;
  std::atomic<size_t> done_{0};
  std::mutex draw_;
  std::chrono::steady_clock::time_point last_{};
  bool on_ = false;
  bool drawn_ = false;
};

}  // namespace sixfold
