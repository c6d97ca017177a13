// Scripted signals for tests: take() returns them one by one, each after `delay_polls` calls.
#pragma once

#include <optional>
#include <vector>

#include "grpo/process/signals.h"

namespace grpo::process {

class FakeSignals final : public SignalSource {
 public:
  void push(int sig, int delay_polls = 0) { script_.push_back({sig, delay_polls}); }
  std::optional<int> take() override;

 private:
  struct Item {
    int sig;
    int delay;
  };
  std::vector<Item> script_;
};

}  // namespace grpo::process
