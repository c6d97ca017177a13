#include "grpo/supervise/verl_engine.h"
#include "grpo/core/json_text.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "grpo/core/text.h"
#include "grpo/supervise/output_parsing.h"

namespace grpo::supervise {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Ray colours the prefix of an actor's output (ESC [ ... m): dropped.
std::string strip_ansi(std::string_view in) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\x1b' && i + 1 < in.size() && in[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < in.size() && !(in[j] >= '@' && in[j] <= '~')) ++j;
      i = j;
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

std::optional<double> number(std::string_view v) {
  v = core::trim(v);
  // numpy 2 scalars print as np.float64(0.5) (pprint.pformat of a numpy number).
  if (const auto open = v.find('('); open != std::string_view::npos && v.back() == ')') {
    v = v.substr(open + 1, v.size() - open - 2);
  }
  if (v.empty()) return std::nullopt;
  const std::string text(v);
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

std::optional<std::int64_t> whole(std::string_view v) {
  std::int64_t n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 0) return std::nullopt;
  return n;
}

// verl's metric names -> telemetry.md's step fields.
constexpr std::pair<std::string_view, std::string_view> kFields[] = {
    {"critic/score/mean", "reward_mean"},
    {"actor/pg_loss", "pg_loss"},
    {"actor/kl_loss", "kl"},
    {"actor/entropy", "entropy"},
    {"actor/pg_clipfrac", "clip_frac"},
    {"actor/grad_norm", "grad_norm"},
    {"actor/lr", "lr"},
    {"response_length/mean", "response_length"},
    {"perf/total_num_tokens", "tokens"},
    {"perf/throughput", "tokens_per_s"},
    {"timing_s/step", "step_s"},
};

}  // namespace

std::optional<json> parse_verl_step_line(std::string_view raw) {
  const std::string clean = strip_ansi(raw);
  std::string_view line = core::trim(clean);
  // Output of a Ray actor (verl's TaskRunner) comes with "(TaskRunner pid=N[, ip=A]) ".
  if (!line.empty() && line.front() == '(') {
    const auto close = line.find(") ");
    if (close == std::string_view::npos) return std::nullopt;
    line = core::trim(line.substr(close + 2));
  }
  if (line.rfind("step:", 0) != 0) return std::nullopt;
  json e = {{"type", "step"}, {"phase", "grpo"}};
  bool first = true;
  std::size_t pos = 0;
  while (pos <= line.size()) {
    auto sep = line.find(" - ", pos);
    const std::string_view part =
        line.substr(pos, sep == std::string_view::npos ? std::string_view::npos : sep - pos);
    pos = sep == std::string_view::npos ? line.size() + 1 : sep + 3;
    const auto colon = part.rfind(':');
    if (colon == std::string_view::npos) {
      if (first) return std::nullopt;
      continue;
    }
    const std::string_view key = core::trim(part.substr(0, colon));
    const std::string_view value = core::trim(part.substr(colon + 1));
    if (first) {
      const auto step = whole(value);
      if (key != "step" || !step) return std::nullopt;
      e["step"] = *step;
      e["grpo_step"] = *step;
      first = false;
      continue;
    }
    const auto v = number(value);
    if (!v || !std::isfinite(*v)) continue;
    for (const auto& [from, to] : kFields) {
      if (key == from) e[std::string(to)] = *v;
    }
    if (key == "critic/rewards/mean" && !e.contains("reward_mean")) e["reward_mean"] = *v;
    // val-core/<data source>/<reward or acc>/mean@N: the first one is the validation reward.
    if (key.rfind("val-core/", 0) == 0 && !e.contains("val_reward") &&
        (key.find("/reward/") != std::string_view::npos ||
         key.find("/acc/") != std::string_view::npos)) {
      e["val_reward"] = *v;
    }
  }
  if (first) return std::nullopt;
  if (e.contains("step_s")) e["wall_s"] = e["step_s"];
  if (e.contains("tokens") && e.contains("tokens_per_s")) {
    e["tokens"] = static_cast<std::int64_t>(e["tokens"].get<double>());
  }
  return e;
}

std::int64_t newest_verl_checkpoint(const fs::path& dir) {
  if (dir.empty()) return -1;
  std::ifstream in(dir / "latest_checkpointed_iteration.txt");
  if (!in) return -1;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text(core::trim(ss.str()));
  const auto n = whole(text);
  if (!n) return -1;
  std::error_code ec;
  if (!fs::is_directory(dir / ("global_step_" + text), ec)) return -1;
  return *n;
}

json verl_run_info_to_json(const VerlRunInfo& info) {
  return {{"schema", "grpo-launch/verl/v1"},
          {"script", info.script},
          {"checkpoint_dir", info.checkpoint_dir},
          {"nodes", info.nodes},
          {"gpus_per_node", info.gpus_per_node}};
}

core::Result<VerlRunInfo> verl_run_info_from_json(const json& j, const std::string& file) {
  const core::SourceLocation where{file, 0, 0};
  if (!j.is_object() || j.value("schema", std::string()) != "grpo-launch/verl/v1") {
    return core::make_error(core::ErrorKind::kInvalidValue, "not a grpo-launch/verl/v1 document",
                            where);
  }
  VerlRunInfo info;
  try {
    info.script = j.at("script").get<std::string>();
    info.checkpoint_dir = j.at("checkpoint_dir").get<std::string>();
    info.nodes = j.at("nodes").get<int>();
    info.gpus_per_node = j.at("gpus_per_node").get<int>();
  } catch (const json::exception& e) {
    return core::make_error(core::ErrorKind::kWrongType, e.what(), where);
  }
  if (info.nodes < 1 || info.gpus_per_node < 0) {
    return core::make_error(core::ErrorKind::kInvalidValue, "nodes / gpus_per_node out of range",
                            where);
  }
  return info;
}

VerlRunner::VerlRunner(std::unique_ptr<AttemptRunner> inner,
                       std::function<std::optional<double>()> end_time,
                       std::vector<std::string> nodes, fs::path checkpoint_dir)
    : inner_(std::move(inner)),
      end_time_(std::move(end_time)),
      nodes_(std::move(nodes)),
      checkpoint_dir_(std::move(checkpoint_dir)) {}

core::Status VerlRunner::start(const AttemptSpec& spec) {
  AttemptSpec s = spec;
  if (end_time_) {
    if (const auto end = end_time_()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", *end);
      s.env[kVerlEsiVariable] = buf;
    }
  }
  if (!nodes_.empty()) {
    std::string list;
    for (const auto& n : nodes_) list += (list.empty() ? "" : " ") + n;
    s.env["GRPO_VERL_NODES"] = list;
  }
  newest_ = newest_verl_checkpoint(checkpoint_dir_);
  next_look_ = 0;
  watching_ = true;
  return inner_->start(s);
}

core::Result<std::vector<AttemptEvent>> VerlRunner::poll(double timeout_s) {
  GRPO_TRY(std::vector<AttemptEvent> events, inner_->poll(timeout_s));
  for (auto& ev : events) {
    auto* out = std::get_if<RankOutput>(&ev);
    if (out == nullptr || parse_event_line(out->line)) continue;
    if (auto step = parse_verl_step_line(out->line)) out->line = core::json_text(*step);
  }
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const auto exit_at = std::find_if(events.begin(), events.end(), [](const AttemptEvent& ev) {
    return std::holds_alternative<AttemptExit>(ev);
  });
  const bool ended = exit_at != events.end();
  if (!checkpoint_dir_.empty() && watching_ && (now >= next_look_ || ended)) {
    next_look_ = now + 1.0;
    const std::int64_t newest = newest_verl_checkpoint(checkpoint_dir_);
    if (newest > newest_) {
      newest_ = newest;
      const json e = {
          {"type", "checkpoint_saved"},
          {"step", newest},
          {"path", (checkpoint_dir_ / ("global_step_" + std::to_string(newest))).string()},
          {"reason", "verl"}};
      // Before the attempt's end: the checkpoint belongs to the attempt.
      events.insert(exit_at, AttemptEvent{std::in_place_type<RankOutput>,
                                          RankOutput{0, core::json_text(e), std::nullopt}});
    }
  }
  if (ended) watching_ = false;
  return events;
}

std::vector<std::string> VerlRunner::nodes() const {
  return nodes_.empty() ? inner_->nodes() : nodes_;
}

}  // namespace grpo::supervise
