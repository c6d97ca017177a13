// Reading what the ranks and srun print (pure): a rank's stdout line as a telemetry event,
// srun's `--label` prefix ("R: ..."), and srun's own error lines ("srun: error: n2: task 1:
// Exited with exit code 6", "Node failure on n2", "Out Of Memory"). docs/supervisor.md.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "grpo/supervise/attempt_runner.h"

namespace grpo::supervise {

// A telemetry event: a JSON object with a string "type" (docs/telemetry.md). nullopt for
// anything else (an external trainer's ordinary output).
std::optional<nlohmann::json> parse_event_line(std::string_view line);

// srun --label: "R: text" or "  R: text" (srun pads the rank to the width of the largest one).
struct Labelled {
  int rank = 0;
  std::string_view text;
};
std::optional<Labelled> parse_label(std::string_view line);

// srun's own line (not a rank's): a rank's end, a finding, or nullopt for the rest.
std::optional<std::variant<RankExit, RunnerNote>> parse_srun_message(std::string_view line);

}  // namespace grpo::supervise
