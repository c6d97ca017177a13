#include "grpo/test_support/fake_signals.h"

namespace grpo::process {

std::optional<int> FakeSignals::take() {
  if (script_.empty()) return std::nullopt;
  if (script_.front().delay > 0) {
    --script_.front().delay;
    return std::nullopt;
  }
  const int s = script_.front().sig;
  script_.erase(script_.begin());
  return s;
}

}  // namespace grpo::process
