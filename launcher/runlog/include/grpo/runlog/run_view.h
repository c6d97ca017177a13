// Views of a run built from its event-log summary (event_log.h): the one-line live progress,
// the `grpo-launch status` report (text and JSON; status_json.cpp), and the Prometheus text file
// for node_exporter's textfile collector (docs/run-visibility.md). Pure: values in, text out; `now`
// is passed in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/runlog/event_log.h"

namespace grpo::supervise {

// "step 12/40 | reward 0.62 | val 0.58 | 2.3k tok/s | ETA 1m05s | restarts 1 | failure: rank 1 ..."
std::string progress_line(const RunSummary& s, double now);

// The multi-line report of `grpo-launch status`.
std::string render_status(const RunSummary& s, const std::string& run_dir, double now);

// One run of a directory of runs: its summary, or why its event log could not be read.
struct RunListEntry {
  std::string name;  // the run directory's name
  std::optional<RunSummary> summary;
  std::string error;
  std::string run_dir;  // the directory as given (status_list_json)
};

// `grpo-launch status DIR` over a directory of runs: a header and one line per run
// (name, state, step/total, reward, effective time, layout; "-" where unknown).
std::string render_status_list(const std::vector<RunListEntry>& runs, double now);

// `grpo-launch status --format json` of one run (schema grpo-launch/status/v1,
// docs/run-visibility.md); `torn`: the log's newest line is incomplete.
nlohmann::json status_json(const RunSummary& s, const std::string& run_dir, bool torn, double now);

// `grpo-launch status DIR --format json` (schema grpo-launch/status-list/v1): one object per run,
// in the order given, with its directory.
nlohmann::json status_list_json(const std::vector<RunListEntry>& runs, double now);

// Prometheus exposition format (text 0.0.4), metric names grpo_*; `run` labels every sample.
std::string render_prometheus(const RunSummary& s, const std::string& run);

// Effective-training-time ratio: (wall time - time lost, goodput.h) / wall time, 1 when empty.
double effective_ratio(const RunSummary& s, double now);
// The run's end for these figures: its last event when finished, else `now`.
double run_end(const RunSummary& s, double now);
// "detection 5s, restart 12s, recomputed 30s, checkpoints 2s, requeue 0s"
std::string lost_by_cause(const RunSummary& s, double now);

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

}  // namespace grpo::supervise
