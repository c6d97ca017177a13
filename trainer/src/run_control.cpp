#include "run_control.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <system_error>

namespace grpo::trainer {
namespace fs = std::filesystem;

namespace {

// Async-signal-safe flags, agreed across ranks once per step.
volatile std::sig_atomic_t g_checkpoint_signal = 0;
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_checkpoint_signal(int) {
  g_checkpoint_signal = 1;
}
extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) _exit(128 + sig);  // a second SIGTERM/SIGINT: leave at once
  g_stop_signal = 1;
}

}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_checkpoint_signal;
  sigaction(SIGUSR2, &sa, nullptr);
  sa.sa_handler = on_stop_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  // A write to a peer that died (Gloo's writev on its socket) must fail with EPIPE and become a
  // COMM_ERROR (exit 4), not kill the rank with SIGPIPE (exit 141): which of the two a surviving
  // rank saw depended on whether it was writing or reading when its peer went away.
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, nullptr);
}

core::Result<ControlRequests> agree_on_control_requests(Communicator& comm,
                                                        const fs::path& run_dir) {
  std::error_code ec;
  const fs::path control = run_dir / "control";
  const bool checkpoint = g_checkpoint_signal != 0 || fs::exists(control / "checkpoint", ec);
  const bool stop = g_stop_signal != 0 || fs::exists(control / "stop", ec);
  at::Tensor flags = at::tensor({checkpoint ? 1 : 0, stop ? 1 : 0}, at::kInt);
  GRPO_TRY_STATUS(comm.allreduce_max(flags));
  return ControlRequests{flags[0].item<int>() != 0, flags[1].item<int>() != 0};
}

void acknowledge_checkpoint_request(const fs::path& run_dir, int rank) {
  g_checkpoint_signal = 0;
  std::error_code ec;
  if (rank == 0) fs::remove(run_dir / "control" / "checkpoint", ec);
}

void acknowledge_stop_request(const fs::path& run_dir, int rank) {
  std::error_code ec;
  if (rank == 0) fs::remove(run_dir / "control" / "stop", ec);
}

}  // namespace grpo::trainer
