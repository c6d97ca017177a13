#include "grpo/supervise_slurm/slurm_job_control.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string_view>

#include "grpo/core/text.h"

namespace grpo::supervise {

using core::ErrorKind;
using core::make_error;

namespace {

// sinfo's long state names (%T, lower case) of nodes that will not run our ranks: DOWN, DRAINED
// / DRAINING (an administrator or slurmd took the node out, e.g. "Kill task failed"), FAIL /
// FAILING. Slurm 23+ may join flags with '+' ("idle+drain"); "not_responding" and "no_respond"
// are what other Slurm commands call the '*' suffix.
bool unhealthy_state_word(std::string_view w) {
  return w == "down" || w == "drained" || w == "draining" || w == "drain" || w == "fail" ||
         w == "failing" || w == "not_responding" || w == "no_respond";
}

}  // namespace

bool unhealthy_node_state(std::string_view state) {
  std::string s = core::ascii_lower(state);
  // The suffixes: '*' not responding (unhealthy); '~' '#' '!' '%' '$' '@' '^' '-' power,
  // maintenance, reboot and planning flags (not by themselves).
  bool not_responding = false;
  while (!s.empty() && std::string_view("*~#!%$@^-+").find(s.back()) != std::string_view::npos) {
    not_responding = not_responding || s.back() == '*';
    s.pop_back();
  }
  if (not_responding) return true;
  for (const std::string_view word : core::split(s, '+')) {
    if (unhealthy_state_word(word)) return true;
  }
  return false;
}

std::vector<std::string> parse_unhealthy_nodes(const std::string& out) {
  std::vector<std::string> bad;
  std::istringstream in(out);
  std::string node, state;
  while (in >> node >> state) {
    if (unhealthy_node_state(state) && std::find(bad.begin(), bad.end(), node) == bad.end()) {
      bad.push_back(node);
    }
  }
  return bad;
}

core::Result<std::optional<double>> SlurmJobControl::end_time() {
  GRPO_TRY(const slurm::JobInfo job, jobs_.load_job(o_.job_id));
  if (!job.time_limit_minutes || job.end_time <= 0) return std::optional<double>{};
  return std::optional<double>{static_cast<double>(job.end_time)};
}

core::Result<std::vector<std::string>> SlurmJobControl::unhealthy_nodes(
    const std::vector<std::string>& nodes) {
  if (nodes.empty()) return std::vector<std::string>{};
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  process::CommandSpec cmd;
  cmd.argv = {o_.sinfo, "-h", "-N", "-n", list, "-o", "%N %T"};
  cmd.timeout = std::chrono::seconds(15);
  GRPO_TRY(const process::Completion done, runner_.run(cmd));
  if (done.timed_out || process::shell_code(done.status) != 0) {
    return make_error(ErrorKind::kUnavailable,
                      "sinfo failed (" + process::describe(done.status) + "): " + done.err);
  }
  return parse_unhealthy_nodes(done.out);
}

core::Status SlurmJobControl::requeue() {
  process::CommandSpec cmd;
  cmd.argv = {o_.scontrol, "requeue", std::to_string(o_.job_id)};
  cmd.timeout = std::chrono::seconds(30);
  GRPO_TRY(const process::Completion done, runner_.run(cmd));
  if (done.timed_out || process::shell_code(done.status) != 0) {
    std::string err = done.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return make_error(done.timed_out ? ErrorKind::kUnavailable : ErrorKind::kRejected,
                      "scontrol requeue " + std::to_string(o_.job_id) + ": " +
                          (err.empty() ? process::describe(done.status) : err));
  }
  return core::ok_status();
}

}  // namespace grpo::supervise
