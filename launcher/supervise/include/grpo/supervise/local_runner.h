// The local runner: every rank of an attempt is a child process of the supervisor on this
// machine, started with the torchrun environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT = a fresh free
// port per attempt, TORCHELASTIC_RESTART_COUNT). Each rank's stdout is read as JSONL telemetry;
// its stderr goes to <log_dir>/rank-<r>.log (with its stdout lines that are not telemetry).
// Ranks lead their own process groups and die with the supervisor (PR_SET_PDEATHSIG).
#pragma once

#include <memory>
#include <vector>

#include "grpo/supervise/attempt_runner.h"
#include "grpo/supervise/child_process.h"

namespace grpo::supervise {

class LocalRunner final : public AttemptRunner {
 public:
  LocalRunner() = default;
  ~LocalRunner() override;
  std::string_view kind() const override { return "local"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override;
  core::Status kill() override;
  bool active() const override { return active_; }
  std::vector<std::string> nodes() const override { return {"localhost"}; }
  int master_port() const { return port_; }  // of the newest attempt

 private:
  struct Rank {
    std::unique_ptr<Child> child;
    LineBuffer out;
    int log_fd = -1;
    OomSnapshot oom;
    bool reported = false;  // its RankExit was returned
  };
  void drain(Rank& r, int rank, std::vector<AttemptEvent>& events);
  void close_logs();

  std::vector<Rank> ranks_;
  bool active_ = false;
  int port_ = 0;
  std::optional<ExitStatus> first_bad_;
};

}  // namespace grpo::supervise
