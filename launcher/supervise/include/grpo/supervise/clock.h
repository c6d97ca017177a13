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

}  // namespace grpo::supervise
