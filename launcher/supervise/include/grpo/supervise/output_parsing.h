// Reading what the ranks and srun print (pure): a rank's stdout line as a telemetry event,
// srun's `--label` prefix ("R: ..."), and srun's own error lines ("srun: error: n2: task 1:
// Exited with exit code 6", "Node failure on n2", "Out Of Memory"). docs/supervisor.md.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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

// srun's I/O messages carry at most this many bytes of a task's output; with --label a longer
// line comes out as pieces of exactly this size, each labelled, then the rest (possibly
// empty): "0: <1024 bytes>", "0: <1024 bytes>", "0: <452 bytes>" for a 2,500-byte line
// (observed with Slurm 22.05 on the test cluster; docs/supervisor.md "Limits").
inline constexpr std::size_t kSrunPieceBytes = 1024;

// The most a joined line holds: a rank's line that never ends (a progress bar redrawn with \r
// comes out as 1 KiB pieces for the whole run) is delivered in parts of this size.
inline constexpr std::size_t kMaxJoinedLine = std::size_t{1} << 20;

// Rejoins each rank's pieces (pieces of different ranks may interleave). A held piece ending in
// '}' followed by a piece starting with '{' is two lines (a telemetry line of exactly k x 1 KiB
// whose empty rest srun did not print between them: "}{" is never inside JSON).
class LabelJoiner {
 public:
  // A labelled piece of `rank`; the rank's lines it completes (none, one, or two: a held line
  // and the new one), in order.
  std::vector<std::string> add(int rank, std::string_view text);
  // The pieces still waiting for their rest (the output ended), as lines, by rank.
  std::vector<std::pair<int, std::string>> flush();

 private:
  std::map<int, std::string> pending_;
};

// srun's own line (not a rank's): a rank's end, a finding, or nullopt for the rest.
std::optional<std::variant<RankExit, RunnerNote>> parse_srun_message(std::string_view line);

}  // namespace grpo::supervise
