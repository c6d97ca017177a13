// An owned file descriptor, closed when the owner goes away: every error path of the code that
// starts programs (process_runner.cpp, the supervisor's child_process.cpp) closes what it opened.
#pragma once

#include <unistd.h>

namespace grpo::process {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  // Gives up ownership: the caller closes it.
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// pipe2(2) into two owned descriptors (read end, write end). Returns false (errno set) on error.
inline bool make_pipe(UniqueFd& read_end, UniqueFd& write_end, int flags) {
  int p[2] = {-1, -1};
  if (::pipe2(p, flags) != 0) return false;
  read_end = UniqueFd(p[0]);
  write_end = UniqueFd(p[1]);
  return true;
}

}  // namespace grpo::process
