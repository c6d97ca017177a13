// A scripted ProcessRunner for unit tests: each start() / run()
// consumes the next scripted outcome in order and records the command it was given; started
// fakes record the signals sent to them.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "grpo/process/process_runner.h"

namespace grpo::process {

struct FakeOutcome {
  ExitStatus status = Exited{0};
  std::string out;  // run(): "captured" stdout
  std::string err;
  bool timed_out = false;
  std::optional<core::Error> error;  // start()/run() fail with this instead
  // start(): wait_for() reports "still running" this many times before the child ends.
  int running_polls = 0;
  // start(): the first signal() ends the child with `status_on_signal` (a rank dying of it).
  bool ends_on_signal = false;
  ExitStatus status_on_signal = Signaled{15};
};

class FakeProcessRunner final : public ProcessRunner {
 public:
  void push(FakeOutcome outcome) { script_.push_back(std::move(outcome)); }

  core::Result<std::unique_ptr<Process>> start(const CommandSpec& spec) override;
  core::Result<Completion> run(const CommandSpec& spec) override;

  const std::vector<CommandSpec>& calls() const { return calls_; }
  // Signals sent to started fakes, in order (kill() records 9).
  const std::vector<int>& signals() const { return *signals_; }
  std::size_t remaining() const { return script_.size(); }

 private:
  FakeOutcome next(const CommandSpec& spec);
  std::deque<FakeOutcome> script_;
  std::vector<CommandSpec> calls_;
  std::shared_ptr<std::vector<int>> signals_ = std::make_shared<std::vector<int>>();
};

}  // namespace grpo::process
