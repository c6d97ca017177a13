#include "grpo/supervise/srun_runner.h"
#include "grpo/core/run_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "grpo/job/job_step.h"
#include "grpo/job/run_spec.h"
#include "grpo/supervise/clock.h"
#include "grpo/supervise/output_parsing.h"

namespace grpo::supervise {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

SrunRunner::~SrunRunner() {
  if (srun_ && !srun_->reaped()) {
    srun_->signal_self(SIGTERM);
    for (int i = 0; i < 100 && !srun_->try_reap(); ++i) ::usleep(20000);
  }
  srun_.reset();
  close_logs();
}

void SrunRunner::close_logs() {
  if (srun_log_ >= 0) ::close(srun_log_);
  srun_log_ = -1;
  for (auto& [rank, fd] : rank_logs_) ::close(fd);
  rank_logs_.clear();
}

core::Status SrunRunner::start(const AttemptSpec& spec) {
  if (active_) return make_error(ErrorKind::kInternal, "an attempt is still running");
  srun_.reset();
  close_logs();
  out_ = LineBuffer();
  err_ = LineBuffer();
  out_pieces_ = LabelJoiner();
  err_pieces_ = LabelJoiner();
  kill_at_ = -1;
  group_killed_ = false;
  GRPO_TRY_STATUS(make_log_dir(spec.log_dir));
  log_dir_ = spec.log_dir;
  core::RunSpec run;
  run.nodes = spec.nodes;
  run.ranks_per_node = spec.ranks_per_node;
  run.cpus_per_task = o_.cpus_per_task;
  run.trainer_command = spec.argv;
  run.exclude = spec.exclude;
  argv_ = core::srun_command(run, o_.srun);
  core::Allocation alloc;
  alloc.nodes = o_.allocation_nodes;
  nodes_ = core::step_nodes(run, alloc);
  srun_log_ = open_log(log_dir_ / core::run_dir::kSrunLog);
  write_line(
      srun_log_, "# " + [&] {
        std::string s;
        for (const auto& w : argv_) s += (s.empty() ? "" : " ") + w;
        return s;
      }());
  ChildSpec c;
  c.argv = argv_;
  c.env = spec.env;
  // srun passes its whole environment to the ranks: never a torchrun or PMIx identity of ours.
  c.unset_env = rank_identity_variables();
  auto child = Child::spawn(c);
  if (!child.ok()) {
    const auto& e = child.error();
    return make_error(e.kind == ErrorKind::kNotFound ? ErrorKind::kNotFound : e.kind,
                      "cannot start the job step: " + e.message);
  }
  srun_ = std::move(child).value();
  active_ = true;
  return core::ok_status();
}

void SrunRunner::rank_log(int rank, std::string_view text) {
  auto it = rank_logs_.find(rank);
  if (it == rank_logs_.end()) {
    it = rank_logs_.emplace(rank, open_log(log_dir_ / ("rank-" + std::to_string(rank) + ".log")))
             .first;
  }
  write_line(it->second, text);
}

void SrunRunner::rank_output(int rank, std::string line, std::vector<AttemptEvent>& events) {
  auto event = parse_event_line(line);
  if (!event) rank_log(rank, line);  // not telemetry
  events.emplace_back(std::in_place_type<RankOutput>,
                      RankOutput{rank, std::move(line), std::move(event)});
}

void SrunRunner::drain(std::vector<AttemptEvent>& events) {
  std::vector<std::string> lines;
  if (srun_->out_fd() >= 0) {
    const bool open = out_.read_from(srun_->out_fd(), lines);
    for (const auto& l : lines) {
      if (auto lab = parse_label(l)) {
        for (auto& line : out_pieces_.add(lab->rank, lab->text)) {
          rank_output(lab->rank, std::move(line), events);
        }
      } else {
        write_line(srun_log_, l);
      }
    }
    if (!open) srun_->close_out();
  }
  lines.clear();
  if (srun_->err_fd() >= 0) {
    const bool open = err_.read_from(srun_->err_fd(), lines);
    for (const auto& l : lines) {
      // srun's own messages first: "srun: error: n1: task 0: Killed" is not a label.
      if (auto msg = parse_srun_message(l)) {
        write_line(srun_log_, l);
        std::visit(
            [&](auto&& m) {
              using T = std::decay_t<decltype(m)>;
              events.emplace_back(std::in_place_type<T>, m);
            },
            *msg);
        continue;
      }
      if (auto lab = parse_label(l)) {
        for (const auto& line : err_pieces_.add(lab->rank, lab->text)) rank_log(lab->rank, line);
        continue;
      }
      write_line(srun_log_, l);
    }
    if (!open) srun_->close_err();
  }
}

core::Result<std::vector<AttemptEvent>> SrunRunner::poll(double timeout_s) {
  std::vector<AttemptEvent> events;
  if (!active_) {
    if (timeout_s > 0) ::usleep(static_cast<useconds_t>(timeout_s * 1e6));
    return events;
  }
  const double deadline = SystemClock().now() + std::max(0.0, timeout_s);
  while (true) {
    drain(events);
    if (auto st = srun_->try_reap()) {
      // What srun wrote before it ended; its pipes may be held open by nothing else.
      drain(events);
      for (auto& [rank, line] : out_pieces_.flush()) rank_output(rank, std::move(line), events);
      for (auto& [rank, line] : err_pieces_.flush()) rank_log(rank, line);
      srun_->close_out();
      srun_->close_err();
      write_line(srun_log_, "# srun ended: " + process::describe(*st));
      events.emplace_back(std::in_place_type<AttemptExit>, AttemptExit{*st});
      active_ = false;
      close_logs();
      return events;
    }
    const double now = SystemClock().now();
    if (kill_at_ >= 0 && !group_killed_ && now - kill_at_ > 3.0) {
      write_line(srun_log_, "# srun still running 3 s after SIGTERM: SIGKILL to its group");
      srun_->signal_group(SIGKILL);
      group_killed_ = true;
    }
    const double left = deadline - now;
    if (!events.empty() || left <= 0) return events;
    wait_readable({srun_->out_fd(), srun_->err_fd()}, left);
  }
}

core::Status SrunRunner::signal(int sig) {
  if (active_ && srun_) srun_->signal_self(sig);
  return core::ok_status();
}

core::Status SrunRunner::kill() {
  if (!active_ || !srun_) return core::ok_status();
  if (kill_at_ < 0) {
    kill_at_ = SystemClock().now();
    srun_->signal_self(SIGTERM);  // srun: "forcing job termination" (SIGKILL to every task)
  } else if (!group_killed_) {
    srun_->signal_group(SIGKILL);
    group_killed_ = true;
  }
  return core::ok_status();
}

}  // namespace grpo::supervise
