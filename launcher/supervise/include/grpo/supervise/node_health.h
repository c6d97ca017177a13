// Node health checks (docs/supervisor.md, "Node health"): what one node checks about itself,
// and how the supervisor reads the answers of every node of an attempt. Pure logic over
// injectable probes (the file system, /sys/class/infiniband, child processes), so tests use
// fakes.
//
// Built-in checks of a node:
//   run_dir     the run directory is writable (a file is created and removed)
//   disk        free space of the run directory's file system >= 2 x the newest checkpoint
//   gpu         `nvidia-smi -L` answers (exit 0 within 30 s), when the profile has GPUs
//   infiniband  every port under /sys/class/infiniband/*/ports/* is ACTIVE, when any exists
// plus --health-check CMD: Slurm's HealthCheckProgram contract, exit non-zero = unhealthy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grpo/process/process_runner.h"

namespace grpo::supervise {

struct HealthSpec {
  std::filesystem::path run_dir;
  std::uint64_t min_free_bytes = 0;  // 2 x the newest checkpoint's bytes (0: not checked)
  bool gpus = false;                 // the profile has GPUs: nvidia-smi must answer
  std::vector<std::string> command;  // --health-check, split without a shell (empty: none)
  double command_timeout_s = 60;
};

// One failed check: becomes a `node_unhealthy` event.
struct HealthFinding {
  std::string node;
  std::string check;  // run_dir, disk, gpu, infiniband, command, no_report
  std::string detail;
};

// What the built-in checks look at (system_probes(): the real ones).
struct HealthProbes {
  // nullopt when a file can be created and removed in the directory, else why not (kNoSpace
  // when the file system is full or over quota: a "disk" finding, not "run_dir").
  std::function<std::optional<core::Error>(const std::filesystem::path&)> write_error;
  // Free bytes for an unprivileged user on the directory's file system; nullopt: unknown.
  std::function<std::optional<std::uint64_t>(const std::filesystem::path&)> free_bytes;
  // (device/port, state line) of every InfiniBand port, e.g. ("mlx5_0/1", "4: ACTIVE").
  std::function<std::vector<std::pair<std::string, std::string>>()> ib_ports;
};
HealthProbes system_probes();

// Runs every check of this node (named `node` in the findings); empty: healthy.
std::vector<HealthFinding> check_node(const std::string& node, const HealthSpec& spec,
                                      const HealthProbes& probes, process::ProcessRunner& runner);

// The size of the newest checkpoint with a manifest under <run_dir>/checkpoints (bytes of every
// file in it), 0 when there is none.
std::uint64_t newest_checkpoint_bytes(const std::filesystem::path& run_dir);

// The answer of one node (`grpo-launch health-check`, one line each, JSON):
//   {"health":"unhealthy","node":N,"check":C,"detail":D}   per failed check
//   {"health":"done","node":N,"healthy":true|false}        last
std::string finding_line(const HealthFinding& f);
std::string done_line(const std::string& node, bool healthy);

// Reads the answers of the nodes of a health step: `lines` are the step's stdout lines (a
// "R: " label of srun --label is allowed before the JSON). A node in `nodes` that did not
// send its done line is unhealthy (check no_report). Findings in `nodes` order.
std::vector<HealthFinding> read_health_answers(const std::vector<std::string>& nodes,
                                               const std::vector<std::string>& lines);

}  // namespace grpo::supervise
