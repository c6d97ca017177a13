// Time for the supervisor, behind one interface so the whole loop runs against a fake clock in
// unit tests (no sleeps): monotonic seconds for every timeout and interval, wall-clock seconds
// (since the Unix epoch) for the event log.
#pragma once

namespace grpo::supervise {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;   // monotonic seconds (arbitrary origin)
  virtual double wall() const = 0;  // seconds since the Unix epoch
  // Waits `seconds` (a fake clock just advances). Never negative.
  virtual void sleep(double seconds) = 0;
};

// steady_clock and system_clock.
class SystemClock final : public Clock {
 public:
  double now() const override;
  double wall() const override;
  void sleep(double seconds) override;
};

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
