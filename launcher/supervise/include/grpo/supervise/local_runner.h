// The local runner: every rank of an attempt is a child process of the supervisor on this
// machine, started with the torchrun environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT = a fresh free
// port per attempt, TORCHELASTIC_RESTART_COUNT). Each rank's stdout is read as JSONL telemetry;
// its stderr goes to <log_dir>/rank-<r>.log (with its stdout lines that are not telemetry).
// Ranks lead their own process groups and die with the supervisor (PR_SET_PDEATHSIG).
//
// Standby ranks (`standby`, on by default): once every rank of an attempt has reported, the
// runner starts the next attempt's ranks ahead of need as `grpo-trainer --standby ARGS`: it loads
// LibTorch (most of its start-up time) and then waits for NUL-ended KEY=VALUE entries on stdin
// (the attempt's environment and the rank's torchrun variables) before it starts for real. A
// restart then skips process start-up. Standbys whose argv no longer matches (the micro batch
// changed) are discarded (stdin closed: they exit 0). They cost memory (one idle process per
// rank), no CPU. Only for the embedded trainer; an external trainer gets fresh processes.
#pragma once

#include <memory>
#include <vector>

#include "grpo/supervise/attempt_runner.h"
#include "grpo/supervise/child_process.h"

namespace grpo::supervise {

class LocalRunner final : public AttemptRunner {
 public:
  explicit LocalRunner(bool standby = false) : standby_enabled_(standby) {}
  ~LocalRunner() override;
  std::string_view kind() const override { return "local"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override;
  core::Status kill() override;
  bool active() const override { return active_; }
  std::vector<std::string> nodes() const override { return {"localhost"}; }
  std::vector<std::pair<int, int>> rank_pids() const override;
  int master_port() const { return port_; }  // of the newest attempt
  // Ranks of the newest attempt that were standbys (0: all started cold).
  int standbys_used() const { return standbys_used_; }

 private:
  struct Standby {
    std::unique_ptr<Child> child;
    std::filesystem::path log;  // renamed to the attempt's rank log when used
  };
  void start_standbys();
  void discard_standbys();
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
  bool standby_enabled_;
  AttemptSpec spec_;               // of the newest attempt
  std::vector<Standby> standbys_;  // for the next attempt, started with spec_.argv
  bool standbys_started_ = false;  // for the current attempt
  int standbys_used_ = 0;
  std::vector<bool> reported_output_;
};

}  // namespace grpo::supervise
