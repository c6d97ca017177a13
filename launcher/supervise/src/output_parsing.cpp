#include "grpo/supervise/output_parsing.h"
#include "grpo/core/text.h"

#include <array>
#include <cctype>
#include <csignal>
#include <utility>

namespace grpo::supervise {

namespace {

// Reads a decimal number at the start of s (advancing s); nullopt when there is none.
std::optional<long> take_number(std::string_view& s) {
  std::size_t i = 0;
  long v = 0;
  while (i < s.size() && i < 10 && std::isdigit(static_cast<unsigned char>(s[i])) != 0) {
    v = v * 10 + (s[i] - '0');
    ++i;
  }
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return v;
}

// A node name as srun prints it: letters, digits, '-', '_', '.'.
std::optional<std::string> node_after(std::string_view line, std::string_view marker) {
  const auto pos = line.find(marker);
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(pos + marker.size());
  std::size_t n = 0;
  while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) != 0 ||
                             rest[n] == '-' || rest[n] == '_' || rest[n] == '.')) {
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::string(rest.substr(0, n));
}

// strsignal() texts srun prints for a task killed by a signal.
constexpr std::array<std::pair<std::string_view, int>, 11> kSignalTexts = {{
    {"Killed", SIGKILL},
    {"Terminated", SIGTERM},
    {"Aborted", SIGABRT},
    {"Segmentation fault", SIGSEGV},
    {"Hangup", SIGHUP},
    {"Interrupt", SIGINT},
    {"Bus error", SIGBUS},
    {"Floating point exception", SIGFPE},
    {"Illegal instruction", SIGILL},
    {"Broken pipe", SIGPIPE},
    {"User defined signal 2", SIGUSR2},
}};

}  // namespace

std::optional<nlohmann::json> parse_event_line(std::string_view line) {
  line = core::trim(line);
  if (line.size() < 2 || line.front() != '{' || line.back() != '}') return std::nullopt;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  if (!j.contains("type") || !j["type"].is_string()) return std::nullopt;
  return j;
}

std::optional<Labelled> parse_label(std::string_view line) {
  std::string_view s = line;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  const auto rank = take_number(s);
  if (!rank || s.size() < 1 || s.front() != ':') return std::nullopt;
  s.remove_prefix(1);
  if (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return Labelled{static_cast<int>(*rank), s};
}

std::optional<std::variant<RankExit, RunnerNote>> parse_srun_message(std::string_view line) {
  const std::string_view l = core::trim(line);
  const bool from_srun = l.rfind("srun:", 0) == 0;
  const bool from_stepd = l.rfind("slurmstepd:", 0) == 0;
  if (!from_srun && !from_stepd) return std::nullopt;
  RunnerNote note;
  note.text = std::string(l);
  if (auto node = node_after(l, "Node failure on ")) {
    note.kind = NoteKind::kNodeFailure;
    note.node = node;
    return note;
  }
  if (l.find("Task launch for ") != std::string_view::npos &&
      l.find(" failed on node ") != std::string_view::npos) {
    note.kind = NoteKind::kNodeFailure;
    note.node = node_after(l, " failed on node ");
    return note;
  }
  if (l.find("oom-kill event") != std::string_view::npos ||
      l.find("Out Of Memory") != std::string_view::npos) {
    note.kind = NoteKind::kOutOfMemory;
  }
  // "srun: error: n2: task 1: Exited with exit code 6" / "... task 0: Killed"
  const auto task = l.find(": task ");
  if (task != std::string_view::npos) {
    std::string_view rest = l.substr(task + 7);
    const auto rank = take_number(rest);
    if (rank && rest.rfind(": ", 0) == 0) {
      rest.remove_prefix(2);
      std::optional<std::string> node;
      // the node sits between "error: " and ": task"
      const auto err = l.find("error: ");
      if (err != std::string_view::npos && err + 7 < task) {
        node = std::string(l.substr(err + 7, task - err - 7));
      }
      if (note.kind == NoteKind::kOutOfMemory) {
        note.rank = static_cast<int>(*rank);
        note.node = node;
        return note;
      }
      constexpr std::string_view kExited = "Exited with exit code ";
      if (rest.rfind(kExited, 0) == 0) {
        std::string_view code = rest.substr(kExited.size());
        if (auto c = take_number(code)) {
          return RankExit{static_cast<int>(*rank), Exited{static_cast<int>(*c)}, node};
        }
      }
      for (const auto& [text, sig] : kSignalTexts) {
        if (rest.rfind(text, 0) == 0) return RankExit{static_cast<int>(*rank), Signaled{sig}, node};
      }
    }
  }
  if (note.kind == NoteKind::kOutOfMemory) return note;
  if (l.find("error") != std::string_view::npos) {
    note.kind = NoteKind::kInfo;
    return note;
  }
  return std::nullopt;
}

std::vector<std::string> LabelJoiner::add(int rank, std::string_view text) {
  std::vector<std::string> out;
  auto it = pending_.find(rank);
  // A whole line of exactly k x 1 KiB whose empty rest did not come before the next line: JSON
  // never holds "}{", so a held '}' and a new '{' are two telemetry lines, not one.
  if (it != pending_.end() && !text.empty() && text.front() == '{' && !it->second.empty() &&
      it->second.back() == '}') {
    out.push_back(std::move(it->second));
    pending_.erase(it);
    it = pending_.end();
  }
  if (text.size() == kSrunPieceBytes) {
    if (it == pending_.end()) it = pending_.emplace(rank, std::string()).first;
    it->second += text;
    // A rank that never ends its line (a progress bar redrawn with \r): what is held goes out
    // as a line at the cap, as LineBuffer cuts a long line, instead of growing for the whole run.
    if (it->second.size() >= kMaxJoinedLine) {
      out.push_back(std::move(it->second));
      pending_.erase(it);
    }
    return out;
  }
  if (it == pending_.end()) {
    out.emplace_back(text);
    return out;
  }
  out.push_back(std::move(it->second) + std::string(text));
  pending_.erase(it);
  return out;
}

std::vector<std::pair<int, std::string>> LabelJoiner::flush() {
  std::vector<std::pair<int, std::string>> out(pending_.begin(), pending_.end());
  pending_.clear();
  return out;
}

}  // namespace grpo::supervise
