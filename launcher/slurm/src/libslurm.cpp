// The only translation unit that includes libslurm's header.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <memory>

#include "grpo/slurm/slurm_job.h"

namespace grpo::slurm {

using core::ErrorKind;
using core::make_error;

namespace {

std::atomic<bool> g_open{false};

struct HostlistDeleter {
  void operator()(hostlist_t hl) const { slurm_hostlist_destroy(hl); }
};
using Hostlist = std::unique_ptr<std::remove_pointer_t<hostlist_t>, HostlistDeleter>;

struct JobInfoMsgDeleter {
  void operator()(job_info_msg_t* m) const { slurm_free_job_info_msg(m); }
};
using JobInfoMsg = std::unique_ptr<job_info_msg_t, JobInfoMsgDeleter>;

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

std::string str(const char* s) {
  return s == nullptr ? std::string() : std::string(s);
}

std::string base_state(uint32_t state) {
  switch (state & JOB_STATE_BASE) {
    case JOB_PENDING:
      return "PENDING";
    case JOB_RUNNING:
      return "RUNNING";
    case JOB_SUSPENDED:
      return "SUSPENDED";
    case JOB_COMPLETE:
      return "COMPLETED";
    case JOB_CANCELLED:
      return "CANCELLED";
    case JOB_FAILED:
      return "FAILED";
    case JOB_TIMEOUT:
      return "TIMEOUT";
    case JOB_NODE_FAIL:
      return "NODE_FAIL";
    case JOB_PREEMPTED:
      return "PREEMPTED";
    case JOB_BOOT_FAIL:
      return "BOOT_FAIL";
    case JOB_DEADLINE:
      return "DEADLINE";
    case JOB_OOM:
      return "OUT_OF_MEMORY";
    default:
      return "UNKNOWN";
  }
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

core::Error slurm_error(std::string_view what, int slurm_errno) {
  const char* text = slurm_strerror(slurm_errno);
  std::string message = std::string(what) + ": " + (text != nullptr ? text : "unknown error") +
                        " (" + std::to_string(slurm_errno) + ")";
  ErrorKind kind = ErrorKind::kInternal;
  if ((slurm_errno >= SLURM_COMMUNICATIONS_CONNECTION_ERROR &&
       slurm_errno <= SLURM_COMMUNICATIONS_MISSING_SOCKET_ERROR) ||
      (slurm_errno >= SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR &&
       slurm_errno <= SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR) ||
      (slurm_errno >= SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH &&
       slurm_errno <= SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT)) {
    kind = ErrorKind::kUnavailable;
  } else if (slurm_errno == ESLURM_INVALID_JOB_ID) {
    kind = ErrorKind::kNotFound;
  }
  return make_error(kind, std::move(message));
}

core::Result<std::vector<std::string>> expand_hostlist(std::string_view list) {
  const std::string text(list);
  Hostlist hl(slurm_hostlist_create(text.c_str()));
  if (!hl) {
    return make_error(ErrorKind::kInvalidValue, "cannot parse host list \"" + text + "\"");
  }
  std::vector<std::string> out;
  const int count = slurm_hostlist_count(hl.get());
  if (count < 0) {
    return make_error(ErrorKind::kInvalidValue, "cannot parse host list \"" + text + "\"");
  }
  out.reserve(static_cast<std::size_t>(count));
  while (true) {
    std::unique_ptr<char, FreeDeleter> host(slurm_hostlist_shift(hl.get()));
    if (!host) break;
    out.emplace_back(host.get());
  }
  if (out.empty() && text.find_first_not_of(" \t,") != std::string::npos) {
    return make_error(ErrorKind::kInvalidValue, "cannot parse host list \"" + text + "\"");
  }
  return out;
}

core::Result<std::uint32_t> parse_job_id(const char* text, std::string_view what) {
  if (text == nullptr || *text == '\0') {
    return make_error(ErrorKind::kMissingKey,
                      std::string(what) + " is not set (run inside a Slurm job)");
  }
  const std::string s(text);
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > 0xffffffffULL) {
      return make_error(ErrorKind::kInvalidValue,
                        std::string(what) + "='" + s + "' is not a job id");
    }
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v == 0 || v >= 0xfffffffeULL) {
    return make_error(ErrorKind::kInvalidValue, std::string(what) + "='" + s + "' is not a job id");
  }
  return static_cast<std::uint32_t>(v);
}

core::Result<std::unique_ptr<LibSlurm>> LibSlurm::open() {
  const char* env_conf = std::getenv("SLURM_CONF");
  const std::string conf =
      env_conf != nullptr && *env_conf != '\0' ? std::string(env_conf) : "/etc/slurm/slurm.conf";
  if (!file_exists(conf)) {
    return make_error(ErrorKind::kUnavailable,
                      "no Slurm configuration: " + conf + " does not exist" +
                          (env_conf != nullptr ? " (SLURM_CONF)" : " (and SLURM_CONF is not set)"));
  }
  bool expected = false;
  if (!g_open.compare_exchange_strong(expected, true)) {
    return make_error(ErrorKind::kInternal, "libslurm is already open in this process");
  }
  slurm_init(conf.c_str());
  return std::unique_ptr<LibSlurm>(new LibSlurm());
}

LibSlurm::~LibSlurm() {
  slurm_fini();
  g_open = false;
}

core::Result<JobInfo> LibSlurm::load_job(std::uint32_t job_id) {
  job_info_msg_t* raw = nullptr;
  if (slurm_load_job(&raw, job_id, SHOW_DETAIL) != SLURM_SUCCESS) {
    return slurm_error("slurm_load_job(" + std::to_string(job_id) + ")", slurm_get_errno());
  }
  JobInfoMsg msg(raw);
  if (!msg || msg->record_count == 0 || msg->job_array == nullptr) {
    return make_error(ErrorKind::kNotFound, "job " + std::to_string(job_id) + " not found");
  }
  // A job array or het job may return several records; take the one with this id.
  const slurm_job_info_t* job = &msg->job_array[0];
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    if (msg->job_array[i].job_id == job_id) job = &msg->job_array[i];
  }
  JobInfo info;
  info.job_id = job->job_id;
  info.name = str(job->name);
  info.state = base_state(job->job_state);
  info.partition = str(job->partition);
  info.node_list = str(job->nodes);
  if (!info.node_list.empty()) {
    GRPO_TRY(info.nodes, expand_hostlist(info.node_list));
  }
  info.num_nodes = static_cast<int>(job->num_nodes);
  info.num_tasks = job->num_tasks == NO_VAL ? 0 : static_cast<int>(job->num_tasks);
  info.tasks_per_node = job->ntasks_per_node == NO_VAL16 || job->ntasks_per_node == INFINITE16
                            ? 0
                            : static_cast<int>(job->ntasks_per_node);
  if (job->time_limit != INFINITE && job->time_limit != NO_VAL) {
    info.time_limit_minutes = static_cast<int>(job->time_limit);
  }
  info.start_time = static_cast<std::int64_t>(job->start_time);
  info.end_time = static_cast<std::int64_t>(job->end_time);
  info.restart_count = static_cast<int>(job->restart_cnt);
  info.batch_host = str(job->batch_host);
  info.std_out = str(job->std_out);
  info.work_dir = str(job->work_dir);
  return info;
}

core::Allocation to_allocation(const JobInfo& job) {
  core::Allocation a;
  a.job_id = job.job_id;
  a.nodes = job.nodes;
  a.tasks_per_node = job.tasks_per_node;
  return a;
}

}  // namespace grpo::slurm
