// The supervisor's live view (docs/supervisor.md, "What you see"): on a terminal one status line
// kept current with a carriage return (run_view::progress_line, at most once a second); when
// stdout is not a terminal, a plain line every `plain_interval_s` and whenever the state
// changes; and <run_dir>/metrics.prom (run_view::render_prometheus) rewritten atomically every
// `metrics_interval_s` and at the end, for node_exporter's textfile collector.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "grpo/supervise/supervisor.h"

namespace spdlog {
class logger;
}

namespace grpo::supervise {

class ConsoleStatus final : public StatusSink {
 public:
  ConsoleStatus(std::filesystem::path run_dir, std::string run_name, bool tty, std::FILE* out,
                double plain_interval_s = 10, double metrics_interval_s = 5);
  void update(const RunSummary& summary, double wall) override;
  void finish(const RunSummary& summary, double wall) override;

  // Removes the status line from the terminal (before a log line is written) and puts it back.
  void hide();
  void show();

 private:
  void write_metrics(const RunSummary& s);

  std::filesystem::path run_dir_;
  std::string run_name_;
  bool tty_;
  std::FILE* out_;
  double plain_interval_s_;
  double metrics_interval_s_;
  double last_plain_ = -1e18;
  double last_metrics_ = -1e18;
  std::string last_state_;
  std::string line_;
  std::string printed_;  // the newest plain line
  bool shown_ = false;
};

// The process's default logger: levels on stderr ("2026-11-29 21:05:03.123 W message"); on a
// terminal it hides `status`'s line while it writes. `level`: error, warn, info, debug.
void install_logger(const std::string& level, ConsoleStatus* status);

}  // namespace grpo::supervise
