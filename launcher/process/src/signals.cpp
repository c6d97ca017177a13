#include "grpo/process/signals.h"

#include <signal.h>

#include <array>
#include <atomic>
#include <cstring>

namespace grpo::process {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

using core::ErrorKind;
using core::make_error;

namespace {

constexpr std::array<int, 4> kHandled = {SIGTERM, SIGINT, SIGHUP, SIGUSR2};

std::atomic<unsigned long long> g_pending{0};
std::atomic<bool> g_installed{false};
std::array<struct sigaction, 4> g_previous{};

static_assert(std::atomic<unsigned long long>::is_always_lock_free,
              "the signal handler needs a lock-free atomic");

extern "C" void on_signal(int sig) {
  g_pending.fetch_or(1ULL << static_cast<unsigned>(sig));
}

}  // namespace

core::Result<std::unique_ptr<ProcessSignals>> ProcessSignals::install() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) {
    return make_error(ErrorKind::kInternal, "signal handlers are already installed");
  }
  g_pending = 0;
  for (std::size_t i = 0; i < kHandled.size(); ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: blocking calls return with EINTR
    sigaction(kHandled[i], &sa, &g_previous[i]);
  }
  // Unblock them (a parent may have started us with some blocked).
  sigset_t set;
  sigemptyset(&set);
  for (int s : kHandled) sigaddset(&set, s);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  return std::unique_ptr<ProcessSignals>(new ProcessSignals());
}

ProcessSignals::~ProcessSignals() {
  for (std::size_t i = 0; i < kHandled.size(); ++i) sigaction(kHandled[i], &g_previous[i], nullptr);
  g_installed = false;
}

const std::vector<int>& ProcessSignals::handled() {
  static const std::vector<int> v(kHandled.begin(), kHandled.end());
  return v;
}

std::optional<int> ProcessSignals::take() {
  for (int s : kHandled) {
    const unsigned long long bit = 1ULL << static_cast<unsigned>(s);
    if ((g_pending.fetch_and(~bit) & bit) != 0) return s;
  }
  return std::nullopt;
}

}  // namespace grpo::process
