// Signals sent to the supervisor (TERM, INT, HUP, USR2), behind one narrow interface: the real
// handlers (ProcessSignals); tests script them with FakeSignals (tests/support). No libslurm: the
// local supervisor uses them too.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::process {

// "SIGTERM", "SIGUSR2", ...; "signal N" for a number without a name. The one home of this.
std::string signal_name(int sig);

// Where the supervisor learns about signals sent to it.
class SignalSource {
 public:
  virtual ~SignalSource() = default;
  // The next pending signal (each delivery reported once; several of one kind may merge).
  virtual std::optional<int> take() = 0;
};

// Handlers for SIGTERM, SIGINT, SIGHUP and SIGUSR2 for the life of the object (the previous
// dispositions are restored afterwards). The handler only sets a bit (lock-free atomic); it
// does not use SA_RESTART, so a blocking wait returns early. One instance at a time.
class ProcessSignals final : public SignalSource {
 public:
  static core::Result<std::unique_ptr<ProcessSignals>> install();
  ~ProcessSignals() override;
  ProcessSignals(const ProcessSignals&) = delete;
  ProcessSignals& operator=(const ProcessSignals&) = delete;
  std::optional<int> take() override;
  static const std::vector<int>& handled();

 private:
  ProcessSignals() = default;
};

}  // namespace grpo::process
