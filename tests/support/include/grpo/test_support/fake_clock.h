// A clock for tests: moves only when told to.
#pragma once

#include "grpo/supervise/clock.h"

namespace grpo::supervise {

// A clock that only moves when told to: now() starts at 0, wall() at `epoch` + now().
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double epoch = 1.8e9) : epoch_(epoch) {}
  double now() const override { return now_; }
  double wall() const override { return epoch_ + now_; }
  void sleep(double seconds) override { advance(seconds); }
  void advance(double seconds) {
    if (seconds > 0) now_ += seconds;
  }
  void set(double t) {
    if (t > now_) now_ = t;
  }

 private:
  double epoch_;
  double now_ = 0;
};

}  // namespace grpo::supervise
