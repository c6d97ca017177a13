#include "grpo/test_support/fake_process_runner.h"

#include <csignal>

namespace grpo::process {

namespace {

class FakeProcess final : public Process {
 public:
  FakeProcess(FakeOutcome o, std::shared_ptr<std::vector<int>> signals)
      : o_(std::move(o)), signals_(std::move(signals)) {}
  int pid() const override { return 4242; }
  core::Result<std::optional<ExitStatus>> wait_for(
      std::optional<std::chrono::milliseconds>) override {
    if (ended_) return ended_;
    if (o_.running_polls > 0) {
      --o_.running_polls;
      return std::optional<ExitStatus>{};
    }
    ended_ = o_.status;
    return ended_;
  }
  core::Status signal(int sig) override {
    if (ended_) return core::ok_status();
    signals_->push_back(sig);
    if (o_.ends_on_signal) ended_ = o_.status_on_signal;
    return core::ok_status();
  }
  core::Status kill() override {
    if (ended_) return core::ok_status();
    signals_->push_back(SIGKILL);
    ended_ = Signaled{SIGKILL};
    return core::ok_status();
  }

 private:
  FakeOutcome o_;
  std::shared_ptr<std::vector<int>> signals_;
  std::optional<ExitStatus> ended_;
};

}  // namespace

FakeOutcome FakeProcessRunner::next(const CommandSpec& spec) {
  calls_.push_back(spec);
  if (script_.empty()) {
    FakeOutcome o;
    o.error = core::make_error(core::ErrorKind::kInternal,
                               "FakeProcessRunner: no scripted outcome for " +
                                   (spec.argv.empty() ? std::string("<empty>") : spec.argv[0]));
    return o;
  }
  FakeOutcome o = std::move(script_.front());
  script_.pop_front();
  return o;
}

core::Result<std::unique_ptr<Process>> FakeProcessRunner::start(const CommandSpec& spec) {
  FakeOutcome o = next(spec);
  if (o.error) return *o.error;
  return std::unique_ptr<Process>(new FakeProcess(std::move(o), signals_));
}

core::Result<Completion> FakeProcessRunner::run(const CommandSpec& spec) {
  FakeOutcome o = next(spec);
  if (o.error) return *o.error;
  Completion c;
  c.status = o.status;
  c.timed_out = o.timed_out;
  c.out = o.out;
  c.err = o.err;
  return c;
}

}  // namespace grpo::process
