// A JobControl with scripted answers, for tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grpo/supervise/job_control.h"

namespace grpo::supervise {

// Scripted answers for tests.
class FakeJobControl final : public JobControl {
 public:
  bool slurm = true;
  std::string id = "4242";
  int restarts = 0;
  std::vector<std::string> nodes;
  std::optional<double> end;
  std::vector<std::string> down;  // reported unhealthy when asked about them
  int requeues = 0;
  bool requeue_fails = false;

  bool under_slurm() const override { return slurm; }
  std::optional<std::string> job_id() const override {
    return slurm ? std::optional<std::string>(id) : std::nullopt;
  }
  int restart_count() const override { return restarts; }
  std::vector<std::string> allocation_nodes() const override { return nodes; }
  core::Result<std::optional<double>> end_time() override { return end; }
  core::Result<std::vector<std::string>> unhealthy_nodes(
      const std::vector<std::string>& asked) override {
    std::vector<std::string> out;
    for (const auto& n : asked) {
      for (const auto& d : down) {
        if (n == d) out.push_back(n);
      }
    }
    return out;
  }
  core::Status requeue() override {
    if (requeue_fails) return core::make_error(core::ErrorKind::kUnavailable, "scontrol failed");
    ++requeues;
    return core::ok_status();
  }
};

}  // namespace grpo::supervise
