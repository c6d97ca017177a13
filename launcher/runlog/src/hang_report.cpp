#include "grpo/runlog/hang_report.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "grpo/core/text.h"

namespace grpo::supervise {

using nlohmann::json;

namespace {

// Modules whose innermost frames say only how a thread waits, not where.
bool system_module(const std::string& module) {
  return module.rfind("libc.so", 0) == 0 || module.rfind("libpthread.so", 0) == 0 ||
         module.rfind("ld-linux", 0) == 0 || module.rfind("linux-vdso", 0) == 0 ||
         module == "[vdso]";
}

std::string frame_name(const StackFrame& f) {
  if (!f.function.empty()) return f.function;
  return "??@" + (f.module.empty() ? std::string("?") : f.module);
}

const ThreadStack* main_thread(const RankStacks& s) {
  for (const auto& t : s.threads) {
    if (t.main) return &t;
  }
  return s.threads.empty() ? nullptr : &s.threads.front();
}

// The first frame of `t` outside the C library and the loader (0 when every frame is inside).
// grpo-trainer drops its own signal handlers' frames before it reports (stack_report.cpp).
std::size_t first_own_frame(const ThreadStack& t) {
  std::size_t first = 0;
  while (first < t.frames.size() && system_module(t.frames[first].module)) ++first;
  return first == t.frames.size() ? 0 : first;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

std::string key_text(const std::vector<std::string>& key, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < key.size() && i < n; ++i) s += (i ? " < " : "") + key[i];
  if (key.size() > n) s += " < ...";
  return s.empty() ? "(no frames)" : s;
}

std::string_view skip_word(std::string_view v) {
  const auto sp = v.find_first_of(" \t");
  return sp == std::string_view::npos ? std::string_view() : core::trim(v.substr(sp));
}

bool all_digits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

core::Result<RankStacks> rank_stacks_from_event(int rank, const json& e) {
  if (!e.is_object() || !e.contains("threads") || !e["threads"].is_array()) {
    return core::make_error(core::ErrorKind::kParse,
                            "rank " + std::to_string(rank) + ": stack event without threads");
  }
  RankStacks s;
  s.rank = rank;
  s.phase = e.value("phase", std::string());
  s.step = e.contains("step") && e["step"].is_number_integer() ? e["step"].get<std::int64_t>() : -1;
  s.source = e.value("source", std::string("signal"));
  for (const auto& t : e["threads"]) {
    if (!t.is_object()) {
      return core::make_error(core::ErrorKind::kParse,
                              "rank " + std::to_string(rank) + ": a thread is not an object");
    }
    ThreadStack ts;
    ts.tid = t.value("tid", 0L);
    ts.name = t.value("name", std::string());
    ts.main = t.value("main", false);
    for (const auto& f : t.value("frames", json::array())) {
      if (!f.is_object()) {
        return core::make_error(core::ErrorKind::kParse,
                                "rank " + std::to_string(rank) + ": a frame is not an object");
      }
      StackFrame sf;
      sf.function = f.value("function", std::string());
      sf.module = f.value("module", std::string());
      sf.file = f.value("file", std::string());
      sf.line = f.value("line", 0);
      ts.frames.push_back(std::move(sf));
    }
    s.threads.push_back(std::move(ts));
  }
  return s;
}

RankStacks parse_eu_stack(int rank, std::string_view text) {
  RankStacks s;
  s.rank = rank;
  s.source = "eu-stack";
  long pid = -1;
  for (const std::string_view raw : core::split(text, '\n')) {
    const std::string_view line = core::trim(raw);
    if (line.rfind("PID ", 0) == 0) {
      pid = std::atol(std::string(line.substr(4)).c_str());
    } else if (line.rfind("TID ", 0) == 0) {
      ThreadStack t;
      t.tid = std::atol(std::string(line.substr(4)).c_str());
      t.main = t.tid == pid;
      s.threads.push_back(std::move(t));
    } else if (line.rfind('#', 0) == 0 && !s.threads.empty()) {
      // "#3  0x00007f0c8d2a1b2c name - /usr/lib/x86_64-linux-gnu/libc.so.6"
      const std::string_view rest = skip_word(skip_word(line));  // drop "#3" and the address
      StackFrame f;
      std::string_view function = rest, module;
      if (rest.rfind("- ", 0) == 0) {
        function = {};
        module = rest.substr(2);
      } else if (const auto dash = rest.rfind(" - "); dash != std::string_view::npos) {
        function = core::trim(rest.substr(0, dash));
        module = core::trim(rest.substr(dash + 3));
      }
      const auto slash = module.rfind('/');
      f.module = std::string(slash == std::string_view::npos ? module : module.substr(slash + 1));
      f.function = std::string(function);
      s.threads.back().frames.push_back(std::move(f));
    } else if (!line.empty() && !s.threads.empty() && !s.threads.back().frames.empty() &&
               (raw.rfind(' ', 0) == 0 || raw.rfind('\t', 0) == 0)) {
      // "    ../sysdeps/unix/sysv/linux/clock_nanosleep.c:71:10": file:line:col or file:line
      StackFrame& f = s.threads.back().frames.back();
      std::string_view loc = line;
      int numbers[2] = {0, 0};
      int found = 0;
      while (found < 2) {
        const auto colon = loc.rfind(':');
        if (colon == std::string_view::npos || !all_digits(loc.substr(colon + 1))) break;
        numbers[found++] = std::atoi(std::string(loc.substr(colon + 1)).c_str());
        loc = loc.substr(0, colon);
      }
      if (found == 0) continue;
      f.file = std::string(loc);
      f.line = numbers[found - 1];
    }
  }
  return s;
}

std::vector<std::string> stack_key(const RankStacks& stacks) {
  std::vector<std::string> key;
  const ThreadStack* t = main_thread(stacks);
  if (t == nullptr) return key;
  for (std::size_t i = first_own_frame(*t); i < t->frames.size(); ++i)
    key.push_back(frame_name(t->frames[i]));
  return key;
}

HangReport group_stacks(int world_size, const std::vector<RankStacks>& stacks,
                        const std::vector<int>& stopped) {
  HangReport r;
  r.world_size = world_size;
  std::map<int, const RankStacks*> by_rank;
  for (const auto& s : stacks) {
    if (s.rank >= 0 && s.rank < world_size) by_rank[s.rank] = &s;
  }
  std::map<std::vector<std::string>, std::size_t> index;
  std::vector<std::vector<std::string>> keys;
  for (const auto& [rank, s] : by_rank) {
    auto key = stack_key(*s);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, r.groups.size()).first;
      StackGroup g;
      g.phase = s->phase;
      if (const ThreadStack* t = main_thread(*s)) {
        g.frames.assign(t->frames.begin() + static_cast<std::ptrdiff_t>(first_own_frame(*t)),
                        t->frames.end());
      }
      r.groups.push_back(std::move(g));
      keys.push_back(key);
    }
    r.groups[it->second].ranks.push_back(rank);
  }
  for (int rank = 0; rank < world_size; ++rank) {
    if (by_rank.count(rank)) continue;
    const bool is_stopped = std::find(stopped.begin(), stopped.end(), rank) != stopped.end();
    (is_stopped ? r.stopped_ranks : r.missing_ranks).push_back(rank);
  }
  std::vector<std::size_t> order(r.groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (r.groups[a].ranks.size() != r.groups[b].ranks.size()) {
      return r.groups[a].ranks.size() > r.groups[b].ranks.size();
    }
    return r.groups[a].ranks.front() < r.groups[b].ranks.front();
  });
  std::vector<StackGroup> sorted;
  std::vector<std::vector<std::string>> sorted_keys;
  for (std::size_t i : order) {
    sorted.push_back(std::move(r.groups[i]));
    sorted_keys.push_back(std::move(keys[i]));
  }
  r.groups = std::move(sorted);
  const std::size_t answered = by_rank.size();
  r.majority = !r.groups.empty() && answered >= 2 &&
               (r.groups.size() == 1 || r.groups[0].ranks.size() > r.groups[1].ranks.size());
  if (r.majority) {
    for (std::size_t g = 1; g < r.groups.size(); ++g) {
      r.odd_ranks.insert(r.odd_ranks.end(), r.groups[g].ranks.begin(), r.groups[g].ranks.end());
    }
    std::sort(r.odd_ranks.begin(), r.odd_ranks.end());
  }
  // The one line.
  std::string line;
  if (answered == 0) {
    line = "no rank answered with its stack";
  } else if (answered == 1) {
    line = "only rank " + std::to_string(r.groups[0].ranks.front()) + " answered" +
           (r.groups[0].phase.empty() ? "" : " (" + r.groups[0].phase + ")") + ": " +
           key_text(sorted_keys[0], 4);
  } else if (r.majority && r.odd_ranks.empty()) {
    line = "all " + std::to_string(answered) + " answering rank(s) have the same stack" +
           (r.groups[0].phase.empty() ? "" : " (" + r.groups[0].phase + ")") + ": " +
           key_text(sorted_keys[0], 4);
  } else if (r.majority) {
    const StackGroup& odd = r.groups[1];
    line = "rank(s) " + ranks_text(r.odd_ranks) + " differ from the " +
           std::to_string(r.groups[0].ranks.size()) + " others" +
           (odd.phase.empty() ? "" : " (" + odd.phase + ")") + ": " + key_text(sorted_keys[1], 4) +
           "; the others: " + key_text(sorted_keys[0], 4);
  } else {
    line = "no majority among " + std::to_string(answered) +
           " answering rank(s): " + std::to_string(r.groups.size()) + " different stacks";
  }
  if (!r.missing_ranks.empty()) {
    line += "; rank(s) " + ranks_text(r.missing_ranks) + " did not answer";
  }
  if (!r.stopped_ranks.empty()) {
    line = "rank(s) " + ranks_text(r.stopped_ranks) + " stopped (process state T, e.g. SIGSTOP); " +
           line;
  }
  r.summary = line;
  return r;
}

json hang_report_fields(const HangReport& report, std::size_t top_frames) {
  json groups = json::array();
  for (const auto& g : report.groups) {
    json frames = json::array();
    for (std::size_t i = 0; i < g.frames.size() && i < top_frames; ++i) {
      const StackFrame& f = g.frames[i];
      json jf = {{"function", frame_name(f)}};
      if (!f.module.empty()) jf["module"] = f.module;
      if (!f.file.empty()) {
        jf["file"] = f.file;
        jf["line"] = f.line;
      }
      frames.push_back(std::move(jf));
    }
    groups.push_back({{"ranks", g.ranks}, {"phase", g.phase}, {"frames", std::move(frames)}});
  }
  int answered = 0;
  for (const auto& g : report.groups) answered += static_cast<int>(g.ranks.size());
  return {{"world_size", report.world_size},       {"answered", answered},
          {"majority", report.majority},           {"odd_ranks", report.odd_ranks},
          {"missing_ranks", report.missing_ranks}, {"stopped_ranks", report.stopped_ranks},
          {"groups", std::move(groups)},           {"summary", report.summary}};
}

std::string format_stacks(const std::vector<RankStacks>& stacks) {
  std::vector<const RankStacks*> sorted;
  for (const auto& s : stacks) sorted.push_back(&s);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RankStacks* a, const RankStacks* b) { return a->rank < b->rank; });
  std::string out;
  for (const RankStacks* s : sorted) {
    out += "rank " + std::to_string(s->rank) + " (" + (s->phase.empty() ? "?" : s->phase) +
           (s->step >= 0 ? ", step " + std::to_string(s->step) : std::string()) + ", " + s->source +
           ")\n";
    for (const auto& t : s->threads) {
      out += "  thread " + std::to_string(t.tid) + (t.name.empty() ? "" : " \"" + t.name + "\"") +
             (t.main ? " (main)" : "") + "\n";
      for (std::size_t i = 0; i < t.frames.size(); ++i) {
        const StackFrame& f = t.frames[i];
        out += "    #" + std::to_string(i) + " " + frame_name(f);
        if (!f.file.empty()) out += " at " + f.file + ":" + std::to_string(f.line);
        if (!f.module.empty()) out += " [" + f.module + "]";
        out += "\n";
      }
    }
  }
  return out;
}

std::string top_frames_text(const json& frames, std::size_t n) {
  std::string s;
  std::size_t i = 0;
  if (!frames.is_array()) return s;
  for (const auto& f : frames) {
    if (i == n) {
      s += " < ...";
      break;
    }
    const std::string name = f.is_object() ? f.value("function", std::string("?")) : "?";
    s += (i ? " < " : "") + name;
    ++i;
  }
  return s;
}

}  // namespace grpo::supervise
