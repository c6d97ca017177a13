#include "grpo/slurm/sbatch.h"
#include "grpo/core/text.h"

#include <algorithm>
#include <cctype>

namespace grpo::slurm {

using process::CommandSpec;
using process::Completion;
using process::describe;
using process::Exited;
using process::ProcessRunner;
using process::Signaled;

using core::ErrorKind;
using core::make_error;

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(core::trim(text.substr(start, end - start)));
    if (!line.empty()) out.push_back(std::move(line));
    start = end + 1;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& overriding_sbatch_variables() {
  static const std::vector<std::string> names = {
      "SBATCH_OUTPUT",  "SBATCH_ERROR",      "SBATCH_OPEN_MODE", "SBATCH_SIGNAL",
      "SBATCH_REQUEUE", "SBATCH_NO_REQUEUE", "SBATCH_EXPORT",    "SBATCH_DISTRIBUTION",
      "SBATCH_WAIT",    "SBATCH_ARRAY_INX"};
  return names;
}

core::Result<Submitted> parse_sbatch_parsable(std::string_view out) {
  const auto lines = lines_of(out);
  if (lines.empty()) return make_error(ErrorKind::kInternal, "sbatch printed no job id");
  const std::string& line = lines.back();
  const auto semi = line.find(';');
  const std::string id = line.substr(0, semi);
  std::uint64_t v = 0;
  bool ok = !id.empty() && id.size() <= 10;
  for (char c : id) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || v == 0 || v > 0xffffffffULL) {
    return make_error(ErrorKind::kInternal,
                      "cannot read a job id from sbatch's output \"" + line.substr(0, 200) + "\"");
  }
  Submitted s;
  s.job_id = static_cast<std::uint32_t>(v);
  if (semi != std::string::npos) s.cluster = line.substr(semi + 1);
  return s;
}

std::string sbatch_reason(std::string_view err) {
  const auto lines = lines_of(err);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto pos = it->find("error:");
    if (pos == std::string::npos) continue;
    return std::string(core::trim(std::string_view(*it).substr(pos + 6)));
  }
  return lines.empty() ? std::string() : lines.back();
}

bool is_unreachable_message(std::string_view message) {
  static const char* const kPatterns[] = {
      "unable to contact slurm controller",
      "socket timed out",
      "connection refused",
      "communication connection failure",
      "zero bytes were transmitted",
      "could not establish a configuration source",
      "unable to process configuration file",
      "s_p_parse_file",
      "munge",
      "slurm_persist_conn_open",
  };
  const std::string m = core::ascii_lower(message);
  return std::any_of(std::begin(kPatterns), std::end(kPatterns),
                     [&](const char* p) { return m.find(p) != std::string::npos; });
}

core::Result<Submitted> submit_batch(ProcessRunner& runner, const SubmitRequest& request,
                                     bool* maybe_submitted) {
  if (maybe_submitted != nullptr) *maybe_submitted = false;
  CommandSpec cmd;
  cmd.argv = {request.sbatch, "--parsable", request.script};
  cmd.unset_env = overriding_sbatch_variables();
  cmd.timeout = request.timeout;
  auto done = runner.run(cmd);
  if (!done.ok()) {
    if (done.error().kind == ErrorKind::kNotFound) {
      return make_error(ErrorKind::kUnavailable,
                        "Slurm is unreachable: " + done.error().message +
                            " (is Slurm installed, and is this a login node?)");
    }
    return make_error(ErrorKind::kUnavailable,
                      "Slurm is unreachable: cannot run sbatch: " + done.error().message);
  }
  const Completion& c = done.value();
  const std::string reason = sbatch_reason(c.err);
  if (c.timed_out) {
    if (maybe_submitted != nullptr) *maybe_submitted = true;
    return make_error(ErrorKind::kUnavailable,
                      "sbatch timed out after " + std::to_string(request.timeout.count() / 1000) +
                          " s; the job may or may not have been submitted (check squeue)" +
                          (reason.empty() ? std::string() : "; sbatch: " + reason));
  }
  if (std::holds_alternative<Signaled>(c.status)) {
    if (maybe_submitted != nullptr) *maybe_submitted = true;
    return make_error(ErrorKind::kUnavailable,
                      "sbatch died of " + describe(c.status) +
                          "; the job may or may not have been submitted (check squeue)");
  }
  const int code = std::get<Exited>(c.status).code;
  if (code != 0) {
    const std::string said = reason.empty() ? "exit " + std::to_string(code) : reason;
    if (is_unreachable_message(said)) {
      return make_error(ErrorKind::kUnavailable, "Slurm is unreachable: sbatch: " + said);
    }
    return make_error(ErrorKind::kRejected, "sbatch rejected the job: " + said);
  }
  auto parsed = parse_sbatch_parsable(c.out);
  if (!parsed.ok() && maybe_submitted != nullptr) *maybe_submitted = true;
  return parsed;
}

}  // namespace grpo::slurm
