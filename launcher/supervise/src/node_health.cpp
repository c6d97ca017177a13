#include "grpo/supervise/node_health.h"
#include "grpo/core/json_text.h"
#include "grpo/core/run_dir.h"
#include "grpo/io/checkpoint_files.h"
#include "grpo/io/files.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "grpo/core/text.h"

namespace grpo::supervise {

namespace fs = std::filesystem;
using nlohmann::json;

HealthProbes system_probes() {
  HealthProbes p;
  p.write_error = [](const fs::path& dir) -> std::optional<core::Error> {
    const fs::path probe = dir / (".health-" + std::to_string(::getpid()));
    auto st = io::write_file_synced(probe, "ok\n", 0600, /*exclusive=*/true);
    std::error_code ec;
    fs::remove(probe, ec);
    if (!st.ok()) return st.error();
    return std::nullopt;
  };
  p.free_bytes = [](const fs::path& dir) -> std::optional<std::uint64_t> {
    struct statvfs s {};
    if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(s.f_bavail) * static_cast<std::uint64_t>(s.f_frsize);
  };
  p.ib_ports = [] {
    std::vector<std::pair<std::string, std::string>> out;
    std::error_code ec;
    const fs::path root = "/sys/class/infiniband";
    for (fs::directory_iterator dev(root, ec), end; !ec && dev != end; dev.increment(ec)) {
      std::error_code ec2;
      for (fs::directory_iterator port(dev->path() / "ports", ec2), e2; !ec2 && port != e2;
           port.increment(ec2)) {
        std::ifstream in(port->path() / "state");
        std::string line;
        std::getline(in, line);
        out.emplace_back(dev->path().filename().string() + "/" + port->path().filename().string(),
                         std::string(core::trim(line)));
      }
    }
    return out;
  };
  return p;
}

namespace {

// Runs argv with a time limit; nullopt when it answered (exit 0), else why not.
std::optional<std::string> run_check(process::ProcessRunner& runner,
                                     const std::vector<std::string>& argv, double timeout_s) {
  process::CommandSpec spec;
  spec.argv = argv;
  spec.out = process::Stream::kNull;
  spec.err = process::Stream::kCapture;
  spec.max_capture = 4096;
  spec.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  auto done = runner.run(spec);
  if (!done.ok()) return done.error().message;
  if (done->timed_out) {
    return argv.front() + " did not answer within " + core::format_fixed(timeout_s, 0) + " s";
  }
  if (process::shell_code(done->status) == 0) return std::nullopt;
  std::string why = argv.front() + ": " + process::describe(done->status);
  const std::string_view err = core::trim(done->err);
  if (!err.empty()) {
    const auto nl = err.rfind('\n');
    why += " (" + std::string(nl == std::string_view::npos ? err : err.substr(nl + 1)) + ")";
  }
  return why;
}

}  // namespace

std::vector<HealthFinding> check_node(const std::string& node, const HealthSpec& spec,
                                      const HealthProbes& probes, process::ProcessRunner& runner) {
  std::vector<HealthFinding> out;
  if (auto why = probes.write_error(spec.run_dir)) {
    out.push_back({node, why->kind == core::ErrorKind::kNoSpace ? "disk" : "run_dir",
                   "the run directory is not writable: " + why->message});
  }
  if (spec.min_free_bytes > 0) {
    const auto free = probes.free_bytes(spec.run_dir);
    if (free && *free < spec.min_free_bytes) {
      out.push_back({node, "disk",
                     core::format_gib(static_cast<double>(*free)) + " free under " +
                         spec.run_dir.string() + ", need " +
                         core::format_gib(static_cast<double>(spec.min_free_bytes)) +
                         " (2 x the newest checkpoint)"});
    }
  }
  if (spec.gpus) {
    if (auto why = run_check(runner, {"nvidia-smi", "-L"}, 30)) {
      out.push_back({node, "gpu", "nvidia-smi does not answer: " + *why});
    }
  }
  for (const auto& [port, state] : probes.ib_ports()) {
    if (state.find("ACTIVE") == std::string::npos) {
      out.push_back({node, "infiniband", "port " + port + " is " + state + ", not ACTIVE"});
    }
  }
  if (!spec.command.empty()) {
    if (auto why = run_check(runner, spec.command, spec.command_timeout_s)) {
      out.push_back({node, "command", "--health-check failed: " + *why});
    }
  }
  return out;
}

std::uint64_t newest_checkpoint_bytes(const fs::path& run_dir) {
  const auto committed = io::newest_committed_checkpoint(run_dir / core::run_dir::kCheckpoints);
  if (!committed) return 0;
  const fs::path& newest = committed->second;
  std::error_code ec;
  std::uint64_t bytes = 0;
  for (fs::recursive_directory_iterator it(newest, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) bytes += it->file_size(e2);
  }
  return bytes;
}

std::string finding_line(const HealthFinding& f) {
  return core::json_text(
      json{{"health", "unhealthy"}, {"node", f.node}, {"check", f.check}, {"detail", f.detail}});
}

std::string done_line(const std::string& node, bool healthy) {
  return core::json_text(json{{"health", "done"}, {"node", node}, {"healthy", healthy}});
}

std::vector<HealthFinding> read_health_answers(const std::vector<std::string>& nodes,
                                               const std::vector<std::string>& lines) {
  std::map<std::string, std::vector<HealthFinding>> found;
  std::map<std::string, bool> done;
  for (const std::string& raw : lines) {
    std::string_view line = core::trim(raw);
    if (const auto brace = line.find('{'); brace != std::string_view::npos) {
      line = line.substr(brace);  // "R: " of srun --label
    } else {
      continue;
    }
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("health") || !j["health"].is_string() ||
        !j.contains("node") || !j["node"].is_string()) {
      continue;
    }
    const std::string node = j["node"].get<std::string>();
    const std::string kind = j["health"].get<std::string>();
    if (kind == "done") {
      done[node] = true;
    } else if (kind == "unhealthy") {
      found[node].push_back(
          {node, j.value("check", std::string("?")), j.value("detail", std::string())});
    }
  }
  std::vector<HealthFinding> out;
  for (const std::string& n : nodes) {
    if (auto it = found.find(n); it != found.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
    if (!done.count(n)) {
      out.push_back({n, "no_report", "the node did not answer the health check"});
    }
  }
  return out;
}

}  // namespace grpo::supervise
