// The Slurm runner: an attempt is one job step, `srun --mpi=pmix --label --kill-on-bad-exit=1
// ... [--exclude=lost nodes] <trainer>` (core::srun_command), inside the job's allocation. Each
// rank learns its place from PMIx. srun's labelled stdout ("R: {...}") is rank R's telemetry;
// labelled stderr goes to <log_dir>/rank-R.log; srun's own lines go to <log_dir>/srun.log and
// are read for rank ends ("task 1: Exited with exit code 6"), node failures and OOM kills.
//
// Signals: USR2 is forwarded by srun to every rank; srun answers TERM/INT by killing the step
// (SIGKILL to the tasks), which is what kill() uses; if srun itself is still there 3 s later
// its process group is SIGKILLed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grpo/supervise/attempt_runner.h"
#include "grpo/supervise/child_process.h"
#include "grpo/supervise/output_parsing.h"

namespace grpo::supervise {

struct SrunOptions {
  std::string srun = "srun";                  // a path, or a name looked up in PATH
  int cpus_per_task = 0;                      // --cpus-per-task (0: not given)
  std::vector<std::string> allocation_nodes;  // the job's nodes, Slurm's order
};

class SrunRunner final : public AttemptRunner {
 public:
  explicit SrunRunner(SrunOptions options) : o_(std::move(options)) {}
  ~SrunRunner() override;
  std::string_view kind() const override { return "slurm"; }
  core::Status start(const AttemptSpec& spec) override;
  core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override;
  core::Status signal(int sig) override;
  core::Status kill() override;
  bool active() const override { return active_; }
  std::vector<std::string> nodes() const override { return nodes_; }
  // srun's argv of the newest attempt.
  const std::vector<std::string>& argv() const { return argv_; }

 private:
  void drain(std::vector<AttemptEvent>& events);
  void rank_log(int rank, std::string_view text);
  // A rank's whole stdout line: telemetry to the supervisor, anything else to its log too.
  void rank_output(int rank, std::string line, std::vector<AttemptEvent>& events);
  void close_logs();

  SrunOptions o_;
  std::unique_ptr<Child> srun_;
  LineBuffer out_, err_;
  LabelJoiner out_pieces_, err_pieces_;  // srun's 1 KiB pieces of longer lines
  int srun_log_ = -1;
  std::map<int, int> rank_logs_;
  std::filesystem::path log_dir_;
  std::vector<std::string> argv_;
  std::vector<std::string> nodes_;
  bool active_ = false;
  double kill_at_ = -1;
  bool group_killed_ = false;
};

}  // namespace grpo::supervise
