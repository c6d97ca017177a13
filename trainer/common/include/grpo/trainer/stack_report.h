// Every thread's stack on request (docs/telemetry.md, event `stack`; docs/supervisor.md, "Hang
// attribution"). SIGUSR1 asks the process for its stacks: the handler only writes a byte to a
// pipe. A service thread (not signal context) then sends kCaptureSignal to every other thread of
// the process (tgkill, threads listed in /proc/self/task); each thread's handler records its own
// return addresses (glibc backtrace) into a preallocated slot. The service thread waits for the
// slots (at most kCaptureWaitS), symbolizes the addresses with elfutils' libdw (Dwfl: function
// names, and file:line where debug information has it), demangles them and writes one `stack`
// event on the telemetry stream, even while the telemetry is muted (the hang fault). Bounded:
// at most kMaxThreads threads and kMaxFrames frames per thread, names cut at kMaxNameBytes.
// LibTorch-free.
#pragma once

#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string_view>

#include "grpo/core/result.h"

namespace grpo::trainer {

// The signal that asks for the stacks (not used otherwise: SIGUSR2 is the checkpoint request,
// SIGTERM/SIGINT the stop).
inline constexpr int kStackRequestSignal = 10;  // SIGUSR1 on Linux (static_assert in the .cpp)
inline constexpr int kMaxThreads = 64;
inline constexpr int kMaxFrames = 32;
inline constexpr std::size_t kMaxNameBytes = 240;
inline constexpr double kCaptureWaitS = 1.0;

class StackReporter {
 public:
  // Installs the SIGUSR1 and capture-signal handlers and starts the service thread, which writes
  // to `out` (stdout in the trainer). One per process. Errors: kIo (pipe, sigaction).
  static core::Result<std::unique_ptr<StackReporter>> start(std::FILE* out);
  ~StackReporter();  // stops the service thread; SIGUSR1 is ignored from then on
  StackReporter(const StackReporter&) = delete;
  StackReporter& operator=(const StackReporter&) = delete;

  // What the event says besides the stacks: the rank's place (0 of 1 until set) and the phase
  // it is in (RunContext::enter_phase notes every phase change). Thread-safe.
  static void set_world(int rank, int world_size);
  static void note_phase(std::int64_t step, std::string_view phase);

  // The `stack` event's fields for this process now (every thread but the calling one), as the
  // service thread builds them. Not from a signal handler.
  static nlohmann::json capture();

 private:
  StackReporter(std::FILE* out, int read_fd, int write_fd);
  void serve();

  std::FILE* out_;
  int read_fd_;
  int write_fd_;
  std::thread thread_;
};

}  // namespace grpo::trainer
