// `grpo-launch report`: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
// fetched) with the run's charts, built from its event log (docs/events.md). Pure: events in,
// HTML out. Layout contract (tests/report/ relies on it, docs/run-visibility.md documents it):
// every chart is a <figure class="chart"> of kChartHeight pixels, stacked in one column under a
// header of kHeaderHeight pixels, in the order of chart_ids().
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo::report {

inline constexpr int kHeaderHeight = 160;
inline constexpr int kChartHeight = 320;
inline constexpr int kPageWidth = 1000;

struct ReportOptions {
  std::string title;     // shown at the top (the run directory)
  double generated = 0;  // seconds since the epoch, shown in the footer
};

struct ChartInfo {
  std::string id;  // "chart-reward", ...
  std::string title;
  int points = 0;  // data points drawn
};

struct Report {
  std::string html;
  std::vector<ChartInfo> charts;  // in page order
};

// Charts: reward and validation reward; loss; KL; tokens/s; step time per rank; memory per
// rank; expert load per MoE layer over time (one heat map per layer); the timeline of attempts,
// failures and restarts. A chart without data says so inside its frame (and has points = 0).
Report render_report(const std::vector<nlohmann::json>& events, const ReportOptions& options);

// `grpo-launch report RUN1 RUN2 ...`: several runs overlaid, one colour per run ("run 1" is the
// first; the header maps each to its directory, model, profile, state, step, restarts and
// effective share of time). Charts (same layout contract): reward, loss, throughput (rank 0's
// tokens/s) per step, and goodput: the step reached over the wall-clock seconds since the run
// started, where a restart shows as the line stepping back to the resumed step.
inline constexpr std::size_t kMaxComparedRuns = 5;
struct RunEvents {
  std::string name;  // shown in the header (the run directory)
  std::vector<nlohmann::json> events;
};
Report render_comparison(const std::vector<RunEvents>& runs, const ReportOptions& options);

}  // namespace grpo::report
