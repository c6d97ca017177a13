#include "grpo/job/sbatch_script.h"
#include "grpo/core/run_dir.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "grpo/shell/shell_quote.h"

namespace grpo::core {

namespace {

// Punctuation allowed besides ASCII letters and digits, per #SBATCH field. None allows blanks,
// quotes, backslashes, '#', '$', '`', ';' or control characters: Slurm splits #SBATCH lines on
// blanks and strips quotes, and a newline would end the comment line and start a command.
constexpr std::string_view kNameChars = "_.,-";                // partition, account, qos (lists)
constexpr std::string_view kTimeChars = ":-";                  // 1-00:00:00, 72:00:00, UNLIMITED
constexpr std::string_view kMemChars = "";                     // 0, 64G, 512000M
constexpr std::string_view kGresChars = "_.,:/-";              // gpu:8, gpu:a100:8,nic:1
constexpr std::string_view kConstraintChars = "_.,:&|*()[]-";  // a100&ib, [rack1|rack2]*2
constexpr std::string_view kPathChars = "_.,:/@+=-";           // run directory in --output
constexpr std::string_view kExtraValueChars = "_.,:/@+=%&|*()[]^~!-";

// Options the plan or the run directory owns; a profile's extra_args must not change them.
constexpr std::array<std::string_view, 14> kOwnedOptions = {
    "nodes",    "ntasks",  "ntasks-per-node", "output",    "error",   "open-mode", "signal",
    "job-name", "requeue", "no-requeue",      "partition", "account", "qos",       "cpus-per-task"};

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string where_profile(const Plan& plan) {
  return plan.cluster.source_path.empty() ? std::string() : plan.cluster.source_path;
}

Error invalid(const Plan& plan, std::string message) {
  return make_error(ErrorKind::kInvalidValue, std::move(message),
                    SourceLocation{where_profile(plan), 0, 0});
}

Error invalid_in(const ClusterProfile& c, std::string message) {
  return make_error(ErrorKind::kInvalidValue, std::move(message),
                    SourceLocation{c.source_path, 0, 0});
}

}  // namespace

std::string printable(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

Status validate_sbatch_value(std::string_view field, std::string_view option,
                             std::string_view value, std::string_view allowed) {
  const auto refuse = [&](const std::string& why) -> Error {
    return make_error(ErrorKind::kInvalidValue, std::string(field) + " \"" + printable(value) +
                                                    "\" cannot be used in '#SBATCH " +
                                                    std::string(option) + "=': " + why);
  };
  if (value.empty()) return refuse("it is empty");
  for (char c : value) {
    if (is_alnum(c) || allowed.find(c) != std::string_view::npos) continue;
    std::string shown;
    if (c == ' ') {
      shown = "a space";
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      shown = "'" + printable(std::string_view(&c, 1)) + "'";
    } else {
      shown = std::string("'") + c + "'";
    }
    return refuse(shown + " is not allowed (letters, digits" +
                  (allowed.empty() ? std::string() : " and " + std::string(allowed)) + " only)");
  }
  return ok_status();
}

Status fill_sbatch_directives(const ClusterProfile& c, int ranks_per_node,
                              const std::string& run_dir, SbatchView& v) {
  const SlurmDefaults& s = c.slurm;
  const auto field = [&](std::string_view name, std::string_view option, const std::string& value,
                         std::string_view allowed, std::string& out) -> Status {
    if (value.empty()) return ok_status();
    auto st = validate_sbatch_value("slurm." + std::string(name), option, value, allowed);
    if (!st.ok()) return invalid_in(c, "profile " + c.name + ": " + st.error().message);
    out = value;
    return ok_status();
  };
  GRPO_TRY_STATUS(field("partition", "--partition", s.partition, kNameChars, v.partition));
  GRPO_TRY_STATUS(field("account", "--account", s.account, kNameChars, v.account));
  GRPO_TRY_STATUS(field("qos", "--qos", s.qos, kNameChars, v.qos));
  GRPO_TRY_STATUS(field("time", "--time", s.time, kTimeChars, v.time));
  GRPO_TRY_STATUS(field("mem", "--mem", s.mem, kMemChars, v.mem));
  GRPO_TRY_STATUS(
      field("constraint", "--constraint", s.constraint, kConstraintChars, v.constraint));
  if (c.device.vendor != DeviceVendor::kCpu) {
    if (!s.gres.empty()) {
      GRPO_TRY_STATUS(field("gres", "--gres", s.gres, kGresChars, v.gres));
    } else {
      v.gpus_per_node = std::to_string(c.gpus_per_node);
    }
  } else if (!s.gres.empty()) {
    // A CPU profile may still ask for generic resources (e.g. a license or NIC).
    GRPO_TRY_STATUS(field("gres", "--gres", s.gres, kGresChars, v.gres));
  }
  if (c.host.cpu_cores > 0) {
    v.cpus_per_task = std::to_string(std::max(1, c.host.cpu_cores / ranks_per_node));
  }
  if (s.signal_lead_seconds < 0 || s.signal_lead_seconds > 65535) {
    return invalid_in(c, "profile " + c.name + ": slurm.signal_lead_seconds " +
                             std::to_string(s.signal_lead_seconds) +
                             " is out of range (0..65535; Slurm's limit)");
  }
  if (s.signal_lead_seconds > 0) v.signal = "B:USR2@" + std::to_string(s.signal_lead_seconds);

  for (const auto& arg : s.extra_args) {
    const std::string shown = "slurm.extra_args entry \"" + printable(arg) + "\"";
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      return invalid_in(
          c, "profile " + c.name + ": " + shown + " must be a long option, --flag or --flag=value");
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool name_ok = !name.empty() && name.front() != '-';
    for (char ch : name)
      name_ok = name_ok && ((ch >= 'a' && ch <= 'z') || ch == '-' || (ch >= '0' && ch <= '9'));
    if (!name_ok) {
      return invalid_in(c, "profile " + c.name + ": " + shown +
                               ": the option name must be lower-case letters, digits and '-'");
    }
    if (std::find(kOwnedOptions.begin(), kOwnedOptions.end(), name) != kOwnedOptions.end()) {
      return invalid_in(c, "profile " + c.name + ": " + shown + " sets --" + name +
                               ", which grpo-launch sets from the plan (use the profile's own "
                               "field or --set instead)");
    }
    if (eq != std::string::npos) {
      auto st = validate_sbatch_value("slurm.extra_args", "--" + name, arg.substr(eq + 1),
                                      kExtraValueChars);
      if (!st.ok()) return invalid_in(c, "profile " + c.name + ": " + st.error().message);
    }
    v.extra_args.push_back(arg);
  }

  if (run_dir.empty() || run_dir.front() != '/') {
    return make_error(ErrorKind::kInternal,
                      "run directory must be absolute: " + printable(run_dir));
  }
  {
    auto st = validate_sbatch_value("run directory", "--output", run_dir, kPathChars);
    if (!st.ok()) {
      return make_error(ErrorKind::kInvalidValue,
                        st.error().message + "; choose another --run-dir");
    }
  }
  v.output = run_dir + "/slurm-%j.out";
  v.error = run_dir + "/slurm-%j.err";
  return ok_status();
}

Result<SbatchView> make_sbatch_view(const Plan& plan, const SbatchRunOptions& options) {
  if (!plan_ok(plan)) {
    return make_error(ErrorKind::kInfeasible,
                      "the plan is not runnable (infeasible or with errors); see `grpo-launch "
                      "plan`");
  }
  const ClusterProfile& c = plan.cluster;
  const RankMap& map = plan.rank_map;
  if (map.nodes <= 0 || map.ranks_per_node <= 0) {
    return make_error(ErrorKind::kInternal, "the plan has an empty rank map");
  }
  SbatchView v;
  v.version = options.version;
  v.profile_name = sanitize_name(c.name);
  v.model_name = sanitize_name(plan.model.name);
  v.job_name = "grpo-" + v.model_name + "-" + v.profile_name;
  if (options.spare_nodes < 0) {
    return make_error(ErrorKind::kInvalidValue, "--spare-nodes must not be negative");
  }
  v.nodes = std::to_string(map.nodes + options.spare_nodes);
  v.ntasks_per_node = std::to_string(map.ranks_per_node);

  GRPO_TRY_STATUS(fill_sbatch_directives(c, map.ranks_per_node, options.run_dir, v));

  for (const auto& node : plan.env.node) {
    if (!node.empty()) {
      return make_error(ErrorKind::kInvalidValue,
                        "the plan sets per-node environment variables, which the sbatch template "
                        "cannot export");
    }
  }
  for (const auto& [name, value] : plan.env.job) {
    if (!is_env_name(name)) {
      return invalid(plan, "profile " + c.name + ": [env] name \"" + printable(name) +
                               "\" is not a valid environment variable name "
                               "([A-Za-z_][A-Za-z0-9_]*)");
    }
    if (has_nul(value)) {
      return invalid(plan, "profile " + c.name + ": [env] " + name + " contains a NUL byte");
    }
    if (name == "GRPO_RUN_DIR" || name == "GRPO_RUN_ID" || name == "GRPO_PLAN_FILE") {
      return invalid(plan, "profile " + c.name + ": [env] " + name + " is set by grpo-launch");
    }
    v.env.push_back({name, shell_quote(value)});
  }
  for (const auto* text : {&options.launcher_path, &options.run_id}) {
    if (has_nul(*text)) return make_error(ErrorKind::kInvalidValue, "a path contains a NUL byte");
  }
  v.env.push_back(
      {"GRPO_PLAN_FILE", shell_quote(options.run_dir + "/" + std::string(run_dir::kPlan))});
  v.env.push_back({"GRPO_RUN_DIR", shell_quote(options.run_dir)});
  v.env.push_back({"GRPO_RUN_ID", shell_quote(options.run_id)});
  v.launcher = shell_quote(options.launcher_path);
  v.run_dir = shell_quote(options.run_dir);
  return v;
}

}  // namespace grpo::core
