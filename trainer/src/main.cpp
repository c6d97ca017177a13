#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "grpo/trainer/trainer.h"

namespace {

// GRPO_STANDBY=1: grpo-launch's local runner started this process ahead of need (a standby
// rank, docs/supervisor.md). LibTorch is loaded by now; wait for the go: KEY=VALUE lines on
// stdin (the attempt's environment and this rank's torchrun variables) ended by an empty line,
// then start for real. End of input before the go: the standby was not needed, exit 0.
bool wait_for_go() {
  std::string text;
  char buf[4096];
  while (text.find("\n\n") == std::string::npos) {
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.append(buf, static_cast<std::size_t>(n));
  }
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty()) break;
    const auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) {
      ::setenv(line.substr(0, eq).c_str(), line.substr(eq + 1).c_str(), 1);
    }
  }
  ::unsetenv("GRPO_STANDBY");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* s = std::getenv("GRPO_STANDBY"); s != nullptr && std::string(s) == "1") {
    if (!wait_for_go()) return 0;
  }
  return grpo::trainer::run_trainer_cli(argc, argv);
}
