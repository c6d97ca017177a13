#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "grpo/core/standby_go.h"
#include "grpo/trainer/trainer.h"

namespace {

// `grpo-trainer --standby ARGS...`: grpo-launch's local runner started this process ahead of need
// (a standby rank, docs/supervisor.md). LibTorch is loaded by now; wait for the go on stdin: the
// attempt's environment and this rank's torchrun variables (grpo/core/standby_go.h); then start
// for real with ARGS. End of input before the go: the standby was not needed, exit 0. A flag, not
// an environment variable: an environment a user or a job inherited can never make a production run
// exit without training.
bool wait_for_go() {
  std::string text;
  char buf[4096];
  while (true) {
    if (auto entries = grpo::core::decode_standby_go(text)) {
      for (const auto& [k, v] : *entries) ::setenv(k.c_str(), v.c_str(), 1);
      return true;
    }
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--standby") {
    if (!wait_for_go()) return 0;
    argv[1] = argv[0];  // drop the flag: ARGS follow the program name
    return grpo::trainer::run_trainer_cli(argc - 1, argv + 1);
  }
  return grpo::trainer::run_trainer_cli(argc, argv);
}
