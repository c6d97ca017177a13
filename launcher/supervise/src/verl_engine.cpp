#include "grpo/supervise/verl_engine.h"
#include "grpo/core/json_text.h"

#include <sys/stat.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "grpo/core/telemetry_events.h"
#include "grpo/core/text.h"
#include "grpo/supervise/output_parsing.h"
#include "grpo/supervise/self_save.h"

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
  json e = {{"type", core::telemetry::event::kStep}, {"phase", "grpo"}};
  bool first = true;
  bool training = false;  // training/global_step or timing_s/step: a training step's line
  double extra_s = 0;     // timing_s/testing + timing_s/save_checkpoint
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
    if (key == "training/global_step" || key == "timing_s/step") training = true;
    const auto v = number(value);
    if (!v || !std::isfinite(*v)) continue;
    if (key == "timing_s/testing" || key == "timing_s/save_checkpoint") extra_s += *v;
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
  if (first || !training) return std::nullopt;
  if (e.contains("step_s")) e["wall_s"] = e["step_s"].get<double>() + extra_s;
  if (e.contains("tokens") && e.contains("tokens_per_s")) {
    e["tokens"] = static_cast<std::int64_t>(e["tokens"].get<double>());
  }
  return e;
}

bool is_verl_save_line(std::string_view line) {
  return line.find("local_global_step_folder: ") != std::string_view::npos ||
         line.find("Force saving checkpoint: ESI instance expiration approaching.") !=
             std::string_view::npos;
}

std::int64_t newest_verl_checkpoint(const fs::path& dir, double since) {
  if (dir.empty()) return -1;
  const fs::path tracker = dir / "latest_checkpointed_iteration.txt";
  std::ifstream in(tracker);
  if (!in) return -1;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text(core::trim(ss.str()));
  const auto n = whole(text);
  if (!n) return -1;
  std::error_code ec;
  const fs::path actor = dir / ("global_step_" + text) / "actor";
  if (!fs::is_directory(actor, ec) || fs::is_empty(actor, ec) || ec) return -1;
  if (since > 0) {
    struct stat st {};
    if (::stat(tracker.c_str(), &st) != 0) return -1;
    const double mtime =
        static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
    if (mtime < since) return -1;
  }
  return *n;
}

VerlResume verl_resume_for(std::int64_t own_step, const std::string& script_mode, bool hdfs,
                           const fs::path& checkpoint_dir) {
  VerlResume r;
  r.mode = script_mode;
  if (hdfs) {
    r.from = script_mode == "disable" || script_mode.empty()
                 ? "the base model (trainer.default_hdfs_dir is set: verl cannot resume)"
                 : "what resume_mode=" + script_mode + " gives (verl raises with default_hdfs_dir)";
    return r;
  }
  if (own_step >= 0) {
    r.mode = "auto";
    r.step = own_step;
    r.from = (checkpoint_dir / ("global_step_" + std::to_string(own_step))).string() +
             " (the run's newest checkpoint)";
    return r;
  }
  if (script_mode == "disable") {
    r.from = "the base model (the script's resume_mode=disable; the run has no checkpoint yet)";
  } else if (script_mode == "resume_path") {
    r.from = "the script's trainer.resume_from_path (the run has no checkpoint yet)";
  } else {
    r.from = "verl's resume_mode=auto: the newest checkpoint in " + checkpoint_dir.string() +
             " if any (the run has none of its own yet)";
  }
  return r;
}

json verl_run_info_to_json(const VerlRunInfo& info) {
  return {{"schema", "grpo-launch/verl/v1"},
          {"script", info.script},
          {"checkpoint_dir", info.checkpoint_dir},
          {"nodes", info.nodes},
          {"gpus_per_node", info.gpus_per_node},
          {"resume_mode", info.resume_mode},
          {"hdfs", info.hdfs},
          {"submitted", info.submitted}};
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
    info.resume_mode = j.value("resume_mode", std::string());
    info.hdfs = j.value("hdfs", false);
    info.submitted = j.value("submitted", 0.0);
  } catch (const json::exception& e) {
    return core::make_error(core::ErrorKind::kWrongType, e.what(), where);
  }
  if (info.nodes < 1 || info.gpus_per_node < 0) {
    return core::make_error(core::ErrorKind::kInvalidValue, "nodes / gpus_per_node out of range",
                            where);
  }
  return info;
}

VerlRunner::VerlRunner(std::unique_ptr<AttemptRunner> inner, VerlRunnerOptions options)
    : inner_(std::move(inner)), o_(std::move(options)) {}

core::Status VerlRunner::start(const AttemptSpec& spec) {
  AttemptSpec s = spec;
  if (o_.end_time) {
    if (const auto end = o_.end_time()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", self_save_plan(*end, o_.end_reserve_s).save_by);
      s.env[kVerlEsiVariable] = buf;
    }
  }
  if (!o_.nodes.empty()) {
    std::string list;
    for (const auto& n : o_.nodes) list += (list.empty() ? "" : " ") + n;
    s.env["GRPO_VERL_NODES"] = list;
  }
  const std::int64_t own = newest_verl_checkpoint(o_.checkpoint_dir, o_.submitted);
  const VerlResume r = verl_resume_for(own, o_.resume_mode, o_.hdfs, o_.checkpoint_dir);
  s.argv.push_back("--attempt");
  s.argv.push_back(std::to_string(spec.attempt));
  if (!r.mode.empty()) {
    s.argv.push_back("--resume-mode");
    s.argv.push_back(r.mode);
  }
  pending_ = core::json_text(json{{"type", core::telemetry::event::kResume},
                                  {"resume_mode", r.mode.empty() ? "auto" : r.mode},
                                  {"step", r.step},
                                  {"from", r.from}});
  newest_ = own;
  next_look_ = 0;
  last_step_at_.reset();
  last_step_ = 0;
  watching_ = true;
  return inner_->start(s);
}

void VerlRunner::translate(RankOutput& out, double now) {
  if (parse_event_line(out.line)) return;
  if (auto step = parse_verl_step_line(out.line)) {
    // The whole interval since the previous step line: validation and the save included.
    if (last_step_at_) {
      const double interval = now - *last_step_at_;
      if (!step->contains("wall_s") || (*step)["wall_s"].get<double>() < interval) {
        (*step)["wall_s"] = interval;
      }
    }
    last_step_at_ = now;
    last_step_ = (*step)["step"].get<std::int64_t>();
    out.line = core::json_text(*step);
  } else if (is_verl_save_line(out.line)) {
    out.line = core::json_text(json{{"type", core::telemetry::event::kHeartbeat},
                                    {"phase", "checkpoint"},
                                    {"step", last_step_ + 1}});
  }
}

core::Result<std::vector<AttemptEvent>> VerlRunner::poll(double timeout_s) {
  GRPO_TRY(std::vector<AttemptEvent> events, inner_->poll(timeout_s));
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  for (auto& ev : events) {
    if (auto* out = std::get_if<RankOutput>(&ev)) translate(*out, now);
  }
  if (pending_) {
    events.insert(events.begin(), AttemptEvent{std::in_place_type<RankOutput>,
                                               RankOutput{0, *pending_, std::nullopt}});
    pending_.reset();
  }
  const auto exit_at = std::find_if(events.begin(), events.end(), [](const AttemptEvent& ev) {
    return std::holds_alternative<AttemptExit>(ev);
  });
  const bool ended = exit_at != events.end();
  if (!o_.checkpoint_dir.empty() && watching_ && (now >= next_look_ || ended)) {
    next_look_ = now + 1.0;
    const std::int64_t newest = newest_verl_checkpoint(o_.checkpoint_dir, o_.submitted);
    if (newest >= 0 && newest != newest_) {
      newest_ = newest;
      const json e = {
          {"type", core::telemetry::event::kCheckpointSaved},
          {"step", newest},
          {"path", (o_.checkpoint_dir / ("global_step_" + std::to_string(newest))).string()},
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
  return o_.nodes.empty() ? inner_->nodes() : o_.nodes;
}

}  // namespace grpo::supervise
