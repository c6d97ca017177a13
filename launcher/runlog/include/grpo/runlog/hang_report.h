// Hang attribution (docs/supervisor.md, "Hang attribution"): before a hung attempt is killed,
// every rank is asked for its stack; identical stacks are grouped and the ranks outside the
// largest group are named (the odd ranks), with those that did not answer. Pure: stacks come in
// as the trainer's `stack` events (docs/telemetry.md) or as eu-stack's text, the report goes out
// as the `hang_report` event's fields (docs/events.md) and as text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"

namespace grpo::supervise {

struct StackFrame {
  std::string function;  // demangled; empty when unknown
  std::string module;    // file name of the shared object or executable, when known
  std::string file;      // source file, when debug information has it
  int line = 0;
};

struct ThreadStack {
  long tid = 0;
  std::string name;
  bool main = false;               // the process's main thread (tid == pid)
  std::vector<StackFrame> frames;  // innermost first
};

struct RankStacks {
  int rank = 0;
  std::string phase;       // the trainer's phase (its newest heartbeat); empty when unknown
  std::int64_t step = -1;  // -1: unknown
  std::string source;      // "signal" (the trainer's `stack` event) or "eu-stack"
  std::vector<ThreadStack> threads;
};

// A `stack` telemetry event of `rank`. Errors: kParse (no `threads` array, a frame that is not
// an object).
core::Result<RankStacks> rank_stacks_from_event(int rank, const nlohmann::json& event);

// The output of `eu-stack -s -m -p PID` (elfutils): "PID n - process", "TID n:", frames
// "#k  0xADDR function - /path/module" each optionally followed by an indented "file:line:col".
RankStacks parse_eu_stack(int rank, std::string_view text);

// What is compared: the function names of the main thread (the first thread when none is marked
// main), innermost first, after dropping the innermost frames inside the C library and the
// loader (where a waiting thread happens to be in its futex or poll loop). A frame without a
// function name counts as "??@module". Addresses are never compared.
std::vector<std::string> stack_key(const RankStacks& stacks);

struct StackGroup {
  std::vector<int> ranks;          // ascending
  std::string phase;               // of its first rank
  std::vector<StackFrame> frames;  // the first rank's main-thread frames, from stack_key's first
};

struct HangReport {
  int world_size = 0;
  std::vector<StackGroup> groups;  // largest first; equal sizes by their lowest rank
  bool majority = false;           // groups[0] is larger than every other group
  std::vector<int> odd_ranks;      // ranks that answered outside groups[0] (majority only)
  std::vector<int> missing_ranks;  // ranks that did not answer (stopped ones excepted)
  std::vector<int> stopped_ranks;  // stopped processes (state T: SIGSTOP), which cannot answer
  std::string summary;             // one line
};

// Groups the stacks of the ranks that answered (ranks outside [0, world_size) are ignored, a
// rank's second answer replaces its first). No majority (a tie for the largest group, or a world
// of one rank): no odd ranks, every group is listed. `stopped`: ranks whose process was found
// stopped when the stacks were asked for; they lead the summary.
HangReport group_stacks(int world_size, const std::vector<RankStacks>& stacks,
                        const std::vector<int>& stopped = {});

// The `hang_report` event's report fields (docs/events.md): world_size, answered, majority,
// odd_ranks, missing_ranks, stopped_ranks, groups [{ranks, phase, frames (at most `top_frames`:
// {function, module?, file?, line?})}], summary.
nlohmann::json hang_report_fields(const HangReport& report, std::size_t top_frames = 12);

// Every rank's threads and frames as text (logs/attempt-<n>/stacks.txt), ranks in order.
std::string format_stacks(const std::vector<RankStacks>& stacks);

// The stacks asked for after a hang decision, while they come in (the supervisor's state).
struct StackRequest {
  int world_size = 0;
  double asked_at = 0;  // the supervisor's clock
  double deadline = 0;  // stack_timeout_s later
  std::string method;   // "signal" (SIGUSR1 to grpo-trainer), "eu-stack", or "none" (why: note)
  std::string note;     // why there are no stacks (method "none")
  std::vector<RankStacks> received;
  std::vector<int> stopped;  // ranks found stopped (state T) when asked: they cannot answer
  bool reported = false;     // its hang_report was recorded
  // Every rank answered or is stopped, or the deadline passed, or nothing can come.
  bool complete(double now) const {
    if (method == "none" || now >= deadline) return true;
    int done = static_cast<int>(stopped.size());
    for (const auto& r : received) {
      if (std::find(stopped.begin(), stopped.end(), r.rank) == stopped.end()) ++done;
    }
    return done >= world_size;
  }
  // A rank's answer (a second answer of the same rank replaces the first).
  void add(RankStacks s) {
    for (auto& r : received) {
      if (r.rank == s.rank) {
        r = std::move(s);
        return;
      }
    }
    received.push_back(std::move(s));
  }
};

// "f0 < f1 < f2" of a `frames` array of the event (innermost first), at most `n` names.
std::string top_frames_text(const nlohmann::json& frames, std::size_t n);

}  // namespace grpo::supervise
