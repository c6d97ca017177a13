#include "grpo/report/report.h"
#include "grpo/core/json_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "grpo/core/telemetry_events.h"
#include "grpo/runlog/event_log.h"
#include "grpo/runlog/hang_report.h"
#include "grpo/runlog/run_view.h"

namespace grpo::report {
namespace {

using nlohmann::json;

const std::vector<std::string> kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                           "#8c564b", "#e377c2", "#17becf", "#bcbd22"};
constexpr const char* kFailureColor = "#d62728";
constexpr const char* kRestartColor = "#9467bd";
constexpr const char* kCheckpointColor = "#7f7f7f";
constexpr int kMarginLeft = 72, kMarginRight = 24, kMarginTop = 44, kMarginBottom = 48;

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return num(v / 1e6, 1) + "M";
  if (a >= 1e4) return num(v / 1e3, 0) + "k";
  if (a >= 100) return num(v, 0);
  if (a >= 1) return num(v, 1);
  if (a == 0) return "0";
  return num(v, 3);
}

template <typename T>
std::optional<T> get(const json& e, const char* k) {
  if (!e.contains(k) || e[k].is_null()) return std::nullopt;
  try {
    return e[k].get<T>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // sorted by x
};

struct Axis {
  double lo = 0, hi = 1;
};

Axis nice_axis(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = std::fabs(lo) > 0 ? std::fabs(lo) * 0.1 : 1.0;
    return {lo - pad, hi + pad};
  }
  const double pad = (hi - lo) * 0.05;
  return {lo - pad, hi + pad};
}

// About `n` round ticks across the axis. The count is an integer fixed before the loop and capped:
// adding a step to a value below its float resolution (losses of 1e17 and 1e17 + 16) changes
// nothing, and a loop on `v += step` then never ended.
std::vector<double> ticks(const Axis& a, int n = 5) {
  if (!std::isfinite(a.lo) || !std::isfinite(a.hi) || !(a.hi > a.lo)) return {};
  const double raw = (a.hi - a.lo) / n;
  if (!std::isfinite(raw) || !(raw > 0)) return {};
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  }
  const double first = std::ceil(a.lo / step);
  const double count = std::floor((a.hi + 1e-12) / step) - first + 1;
  const int kMaxTicks = 4 * n + 1;
  if (!std::isfinite(count) || count < 1) return {};
  std::vector<double> out;
  const int k_end = count > kMaxTicks ? kMaxTicks : static_cast<int>(count);
  for (int k = 0; k < k_end; ++k) {
    const double v = (first + k) * step;
    if (out.empty() || v > out.back()) out.push_back(v);  // below the resolution: one tick
  }
  return out;
}

std::string figure_open(const std::string& id, const std::string& title, int points) {
  return "<figure class=\"chart\" id=\"" + id + "\" data-points=\"" + std::to_string(points) +
         "\">\n<svg width=\"" + std::to_string(kPageWidth) + "\" height=\"" +
         std::to_string(kChartHeight) + "\" viewBox=\"0 0 " + std::to_string(kPageWidth) + " " +
         std::to_string(kChartHeight) +
         "\" xmlns=\"http://www.w3.org/2000/svg\">\n<text class=\"title\" x=\"" +
         std::to_string(kMarginLeft) + "\" y=\"26\">" + esc(title) + "</text>\n";
}

std::string figure_close() {
  return "</svg>\n</figure>\n";
}

std::string no_data(const std::string& why) {
  return "<text class=\"nodata\" x=\"" + std::to_string(kPageWidth / 2) + "\" y=\"" +
         std::to_string(kChartHeight / 2) + "\" text-anchor=\"middle\">" + esc(why) + "</text>\n";
}

// A line chart of several series over a shared x axis, with optional vertical markers.
ChartInfo line_chart(std::string& html, const std::string& id, const std::string& title,
                     const std::string& x_label, const std::string& y_label,
                     const std::vector<Series>& series,
                     const std::vector<std::pair<double, std::string>>& markers = {}) {
  ChartInfo info{id, title, 0};
  for (const auto& s : series) info.points += static_cast<int>(s.points.size());
  html += figure_open(id, title, info.points);
  if (info.points == 0) {
    html += no_data("no data in the event log");
    html += figure_close();
    return info;
  }
  double xlo = 1e300, xhi = -1e300, ylo = 1e300, yhi = -1e300;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  }
  const Axis xa = xhi > xlo ? Axis{xlo, xhi} : nice_axis(xlo, xhi);
  const Axis ya = nice_axis(ylo, yhi);
  const double pw = kPageWidth - kMarginLeft - kMarginRight;
  const double ph = kChartHeight - kMarginTop - kMarginBottom;
  auto px = [&](double x) { return kMarginLeft + (x - xa.lo) / (xa.hi - xa.lo) * pw; };
  auto py = [&](double y) { return kMarginTop + ph - (y - ya.lo) / (ya.hi - ya.lo) * ph; };
  html += "<rect class=\"plot\" x=\"" + num(kMarginLeft, 0) + "\" y=\"" + num(kMarginTop, 0) +
          "\" width=\"" + num(pw, 0) + "\" height=\"" + num(ph, 0) + "\"/>\n";
  for (double t : ticks(ya)) {
    html += "<line class=\"grid\" x1=\"" + num(kMarginLeft, 0) + "\" x2=\"" +
            num(kMarginLeft + pw, 0) + "\" y1=\"" + num(py(t), 1) + "\" y2=\"" + num(py(t), 1) +
            "\"/><text class=\"tick\" x=\"" + num(kMarginLeft - 6, 0) + "\" y=\"" +
            num(py(t) + 4, 1) + "\" text-anchor=\"end\">" + tick_label(t) + "</text>\n";
  }
  const std::vector<double> xticks = ticks(xa, 8);
  const bool whole = std::all_of(xticks.begin(), xticks.end(),
                                 [](double t) { return std::fabs(t - std::round(t)) < 1e-9; });
  for (double t : xticks) {
    html += "<text class=\"tick\" x=\"" + num(px(t), 1) + "\" y=\"" + num(kMarginTop + ph + 18, 0) +
            "\" text-anchor=\"middle\">" + (whole ? num(t, 0) : tick_label(t)) + "</text>\n";
  }
  html += "<text class=\"label\" x=\"" + num(kMarginLeft + pw / 2, 0) + "\" y=\"" +
          num(kChartHeight - 8, 0) + "\" text-anchor=\"middle\">" + esc(x_label) + "</text>\n";
  html += "<text class=\"label\" transform=\"rotate(-90)\" x=\"" + num(-(kMarginTop + ph / 2), 0) +
          "\" y=\"16\" text-anchor=\"middle\">" + esc(y_label) + "</text>\n";
  for (const auto& [x, label] : markers) {
    if (x < xa.lo || x > xa.hi) continue;
    html += "<line class=\"marker\" x1=\"" + num(px(x), 1) + "\" x2=\"" + num(px(x), 1) +
            "\" y1=\"" + num(kMarginTop, 0) + "\" y2=\"" + num(kMarginTop + ph, 0) +
            "\" stroke=\"" + kRestartColor + "\"><title>" + esc(label) + "</title></line>\n";
  }
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const std::string& color = kPalette[i % kPalette.size()];
    std::string pts;
    for (const auto& [x, y] : s.points) pts += num(px(x), 1) + "," + num(py(y), 1) + " ";
    html += "<g class=\"series\" data-name=\"" + esc(s.name) + "\" data-points=\"" +
            std::to_string(s.points.size()) + "\">\n<polyline fill=\"none\" stroke=\"" + color +
            "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    const std::size_t stride = std::max<std::size_t>(1, s.points.size() / 400);
    for (std::size_t k = 0; k < s.points.size(); k += stride) {
      html += "<circle cx=\"" + num(px(s.points[k].first), 1) + "\" cy=\"" +
              num(py(s.points[k].second), 1) + "\" r=\"3.5\" fill=\"" + color + "\"/>";
    }
    html += "\n</g>\n";
    // Legend.
    const double lx = kMarginLeft + pw - 170.0 * static_cast<double>(series.size() - i);
    html += "<rect x=\"" + num(lx, 0) + "\" y=\"16\" width=\"12\" height=\"12\" fill=\"" + color +
            "\"/><text class=\"legend\" x=\"" + num(lx + 16, 0) + "\" y=\"26\">" + esc(s.name) +
            "</text>\n";
  }
  html += figure_close();
  return info;
}

// tokens_per_expert over steps for one MoE layer, as expert x step cells shaded by the share of
// the mean load (white 0, dark at 2x the mean or more).
ChartInfo heat_map(std::string& html, int layer,
                   const std::map<std::int64_t, std::vector<double>>& by_step) {
  const std::string id = "chart-expert-load-layer-" + std::to_string(layer);
  const std::string title =
      "Expert load, MoE layer " + std::to_string(layer) + " (tokens per expert / mean)";
  std::size_t experts = 0;
  for (const auto& [step, loads] : by_step) experts = std::max(experts, loads.size());
  ChartInfo info{id, title, static_cast<int>(by_step.size() * experts)};
  html += figure_open(id, title, info.points);
  const double pw = kPageWidth - kMarginLeft - kMarginRight - 90;
  const double ph = kChartHeight - kMarginTop - kMarginBottom;
  const double cw = pw / static_cast<double>(std::max<std::size_t>(1, by_step.size()));
  const double ch = ph / static_cast<double>(std::max<std::size_t>(1, experts));
  std::size_t col = 0;
  for (const auto& [step, loads] : by_step) {
    double mean = 0;
    for (double v : loads) mean += v;
    mean = loads.empty() ? 0 : mean / static_cast<double>(loads.size());
    for (std::size_t e = 0; e < loads.size(); ++e) {
      const double share = mean > 0 ? std::min(2.0, loads[e] / mean) / 2.0 : 0.0;
      const int shade = static_cast<int>(std::lround(255.0 * (1.0 - share)));
      char fill[16];
      std::snprintf(fill, sizeof fill, "#%02x%02x%02x", shade, shade, 255);
      html += "<rect class=\"cell\" x=\"" + num(kMarginLeft + static_cast<double>(col) * cw, 1) +
              "\" y=\"" + num(kMarginTop + static_cast<double>(e) * ch, 1) + "\" width=\"" +
              num(cw + 0.5, 1) + "\" height=\"" + num(ch + 0.5, 1) + "\" fill=\"" + fill +
              "\"><title>step " + std::to_string(step) + ", expert " + std::to_string(e) + ": " +
              num(loads[e], 0) + " tokens</title></rect>";
    }
    html += "\n";
    ++col;
  }
  if (!by_step.empty()) {
    html += "<text class=\"tick\" x=\"" + num(kMarginLeft, 0) + "\" y=\"" +
            num(kMarginTop + ph + 18, 0) + "\">step " + std::to_string(by_step.begin()->first) +
            "</text><text class=\"tick\" x=\"" + num(kMarginLeft + pw, 0) + "\" y=\"" +
            num(kMarginTop + ph + 18, 0) + "\" text-anchor=\"end\">step " +
            std::to_string(by_step.rbegin()->first) + "</text>\n";
    html += "<text class=\"label\" transform=\"rotate(-90)\" x=\"" +
            num(-(kMarginTop + ph / 2), 0) +
            "\" y=\"16\" text-anchor=\"middle\">expert (0 at the top)</text>\n";
    // Colour key.
    const double kx = kMarginLeft + pw + 30;
    for (int k = 0; k <= 4; ++k) {
      const int shade = static_cast<int>(std::lround(255.0 * (1.0 - k / 4.0)));
      char fill[16];
      std::snprintf(fill, sizeof fill, "#%02x%02x%02x", shade, shade, 255);
      html += "<rect x=\"" + num(kx, 0) + "\" y=\"" + num(kMarginTop + k * 24.0, 0) +
              "\" width=\"18\" height=\"18\" fill=\"" + fill +
              "\" stroke=\"#999\"/><text class=\"tick\" x=\"" + num(kx + 24, 0) + "\" y=\"" +
              num(kMarginTop + k * 24.0 + 14, 0) + "\">" + num(k / 2.0, 1) + "x</text>\n";
    }
  } else {
    html += no_data("no expert_load events (dense model, or no GRPO step yet)");
  }
  html += figure_close();
  return info;
}

struct Span {
  int attempt;
  double start, end;
  std::string outcome;
};

ChartInfo timeline(std::string& html, const std::vector<json>& events) {
  const std::string id = "chart-timeline";
  const std::string title = "Timeline: attempts, failures, restarts, checkpoints";
  double t0 = 1e300, t1 = -1e300;
  for (const auto& e : events) {
    if (auto t = get<double>(e, "time")) {
      t0 = std::min(t0, *t);
      t1 = std::max(t1, *t);
    }
  }
  std::vector<Span> spans;
  std::vector<std::pair<double, std::string>> failures, restarts, checkpoints;
  for (const auto& e : events) {
    const std::string type = get<std::string>(e, "type").value_or("");
    const double t = get<double>(e, "time").value_or(t0);
    if (type == supervise::ev::kAttemptStarted) {
      if (!spans.empty() && spans.back().end < 0) spans.back().end = t;
      spans.push_back({get<int>(e, "attempt").value_or(0), t, -1, ""});
    } else if (type == supervise::ev::kAttemptEnded && !spans.empty()) {
      spans.back().end = t;
      spans.back().outcome = get<std::string>(e, "outcome").value_or("");
    } else if (type == supervise::ev::kFailure) {
      failures.push_back(
          {t,
           get<std::string>(e, "description").value_or(get<std::string>(e, "class").value_or(""))});
      if (!spans.empty()) spans.back().outcome = "failed";
    } else if (type == supervise::ev::kDecision) {
      restarts.push_back({t, get<std::string>(e, "kind").value_or("") + ": " +
                                 get<std::string>(e, "reason").value_or("")});
    } else if (type == supervise::ev::kCheckpointSaved) {
      checkpoints.push_back(
          {t, "checkpoint at step " + std::to_string(get<std::int64_t>(e, "step").value_or(0))});
    }
  }
  if (!spans.empty() && spans.back().end < 0) spans.back().end = t1;
  ChartInfo info{
      id, title,
      static_cast<int>(spans.size() + failures.size() + restarts.size() + checkpoints.size())};
  html += figure_open(id, title, info.points);
  if (spans.empty()) {
    html += no_data("no attempts in the event log");
    html += figure_close();
    return info;
  }
  const double pw = kPageWidth - kMarginLeft - kMarginRight - 60;
  const double left = kMarginLeft + 60;
  const double span_s = std::max(1e-9, t1 - t0);
  auto px = [&](double t) { return left + (t - t0) / span_s * pw; };
  const std::vector<std::pair<std::string, double>> rows = {
      {"attempts", 80}, {"failures", 140}, {"decisions", 190}, {"checkpoints", 240}};
  for (const auto& [name, y] : rows) {
    html += "<text class=\"label\" x=\"" + num(kMarginLeft - 10, 0) + "\" y=\"" + num(y + 5, 0) +
            "\">" + name + "</text><line class=\"grid\" x1=\"" + num(left, 0) + "\" x2=\"" +
            num(left + pw, 0) + "\" y1=\"" + num(y, 0) + "\" y2=\"" + num(y, 0) + "\"/>\n";
  }
  for (const auto& s : spans) {
    const bool ok = s.outcome != "failed";
    html += "<rect class=\"attempt\" x=\"" + num(px(s.start), 1) + "\" y=\"66\" width=\"" +
            num(std::max(2.0, px(s.end) - px(s.start)), 1) + "\" height=\"28\" fill=\"" +
            (ok ? kPalette[2] : kPalette[1]) + "\"><title>attempt " + std::to_string(s.attempt) +
            " " + esc(s.outcome) + "</title></rect><text class=\"legend\" x=\"" +
            num(px(s.start) + 3, 1) + "\" y=\"60\">#" + std::to_string(s.attempt) + "</text>\n";
  }
  for (const auto& [t, what] : failures) {
    html += "<circle class=\"failure\" cx=\"" + num(px(t), 1) + "\" cy=\"140\" r=\"7\" fill=\"" +
            kFailureColor + "\"><title>" + esc(what) + "</title></circle>\n";
  }
  for (const auto& [t, what] : restarts) {
    html += "<path class=\"decision\" d=\"M" + num(px(t), 1) + ",181 l8,14 l-16,0 z\" fill=\"" +
            kRestartColor + "\"><title>" + esc(what) + "</title></path>\n";
  }
  for (const auto& [t, what] : checkpoints) {
    html += "<rect class=\"checkpoint\" x=\"" + num(px(t) - 2, 1) +
            "\" y=\"232\" width=\"4\" height=\"16\" fill=\"" + kCheckpointColor + "\"><title>" +
            esc(what) + "</title></rect>\n";
  }
  html += "<text class=\"tick\" x=\"" + num(left, 0) + "\" y=\"" + num(kChartHeight - 20, 0) +
          "\">0 s</text><text class=\"tick\" x=\"" + num(left + pw, 0) + "\" y=\"" +
          num(kChartHeight - 20, 0) + "\" text-anchor=\"end\">" +
          esc(supervise::format_duration(span_s)) + "</text>\n";
  html += figure_close();
  return info;
}

// The page up to </style>: the layout contract's sizes (report.h).
std::string page_head(const std::string& title) {
  std::string head;
  head +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>grpo-launch "
      "report: " +
      esc(title) + "</title>\n<style>\n";
  head += "body{margin:0;background:#fff;font-family:sans-serif;color:#222;width:" +
          std::to_string(kPageWidth) + "px}\n";
  head +=
      "header{height:" + std::to_string(kHeaderHeight) +
      "px;box-sizing:border-box;padding:12px 20px;overflow:hidden;border-bottom:1px solid #ddd}\n";
  head += "header h1{font-size:20px;margin:0 0 8px 0}header p{margin:2px 0;font-size:13px}\n";
  head += "figure.chart{margin:0;height:" + std::to_string(kChartHeight) +
          "px;width:" + std::to_string(kPageWidth) + "px;overflow:hidden}\nsvg{display:block}\n";
  head +=
      ".title{font-size:15px;font-weight:bold}.tick{font-size:11px;fill:#555}.label{font-size:12px;"
      "fill:#333}"
      ".legend{font-size:12px}.nodata{font-size:14px;fill:#999}.plot{fill:#fafafa;stroke:#ccc}"
      ".grid{stroke:#e4e4e4}.marker{stroke-dasharray:4 "
      "3;stroke-width:1.5}\nfooter{font-size:11px;color:#777;padding:8px 20px}\n";
  head += "</style>\n</head>\n<body>\n";
  return head;
}

// Rank 0's newest step event per step (steps redone after a restart replace the lost ones).
std::map<std::int64_t, json> rank0_steps(const std::vector<json>& events) {
  std::map<std::int64_t, json> out;
  for (const auto& e : events) {
    if (get<std::string>(e, "type").value_or("") != core::telemetry::event::kStep) continue;
    if (get<int>(e, "rank").value_or(0) != 0) continue;
    if (const auto step = get<std::int64_t>(e, "step")) out[*step] = e;
  }
  return out;
}

// What the report's charts plot, gathered from the log in one pass.
struct ChartData {
  // Newest value per (rank, step): steps redone after a restart replace the lost ones.
  std::map<int, std::map<std::int64_t, json>> steps;                  // rank -> step -> event
  std::map<int, std::map<std::int64_t, std::vector<double>>> expert;  // layer -> step -> loads
  std::map<std::int64_t, double> validation;                          // step -> val reward
  std::vector<std::pair<double, std::string>> restart_steps;          // step where attempts resumed
};

ChartData collect_chart_data(const std::vector<json>& events) {
  ChartData d;
  for (const auto& e : events) {
    const std::string type = get<std::string>(e, "type").value_or("");
    if (type == core::telemetry::event::kStep) {
      const auto step = get<std::int64_t>(e, "step");
      if (!step) continue;
      d.steps[get<int>(e, "rank").value_or(0)][*step] = e;
      if (auto v = get<double>(e, "val_reward")) d.validation[*step] = *v;
    } else if (type == core::telemetry::event::kValidation) {
      if (auto v = get<double>(e, "val_reward"))
        d.validation[get<std::int64_t>(e, "step").value_or(0)] = *v;
    } else if (type == core::telemetry::event::kExpertLoad) {
      const auto loads = get<std::vector<double>>(e, "tokens_per_expert");
      if (loads)
        d.expert[get<int>(e, "layer").value_or(0)][get<std::int64_t>(e, "step").value_or(0)] =
            *loads;
    } else if (type == supervise::ev::kAttemptStarted) {
      const int attempt = get<int>(e, "attempt").value_or(0);
      if (attempt > 1) {
        d.restart_steps.push_back({static_cast<double>(std::max<std::int64_t>(
                                       0, get<std::int64_t>(e, "resume_step").value_or(0))),
                                   "attempt " + std::to_string(attempt)});
      }
    }
  }
  return d;
}

// One rank's `field` over the steps, named `name`.
Series rank_metric(const ChartData& d, int rank, const char* field, const std::string& name) {
  Series s;
  s.name = name;
  if (d.steps.count(rank) == 0) return s;
  for (const auto& [step, e] : d.steps.at(rank)) {
    if (auto v = get<double>(e, field)) s.points.push_back({static_cast<double>(step), *v});
  }
  return s;
}

// `field` over the steps, one series per rank that reports it.
std::vector<Series> per_rank(const ChartData& d, const char* field) {
  std::vector<Series> out;
  for (const auto& [rank, by_step] : d.steps) {
    Series s = rank_metric(d, rank, field, "rank " + std::to_string(rank));
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

// The line charts of training: reward, loss, KL, throughput, step time and memory.
void training_charts(Report& report, std::string& body, const ChartData& d) {
  Series val;
  val.name = "validation reward";
  for (const auto& [step, v] : d.validation) val.points.push_back({static_cast<double>(step), v});
  report.charts.push_back(
      line_chart(body, "chart-reward", "Reward and validation reward", "step", "exact-match reward",
                 {rank_metric(d, 0, "reward_mean", "reward (train)"), val}, d.restart_steps));
  report.charts.push_back(line_chart(body, "chart-loss", "Loss", "step", "loss",
                                     {rank_metric(d, 0, "loss", "loss")}, d.restart_steps));
  report.charts.push_back(line_chart(body, "chart-kl", "KL to the reference policy", "step", "KL",
                                     {rank_metric(d, 0, "kl", "KL to the reference")},
                                     d.restart_steps));
  report.charts.push_back(line_chart(body, "chart-throughput", "Throughput", "step", "tokens / s",
                                     {rank_metric(d, 0, "tokens_per_s", "tokens/s (rank 0)")},
                                     d.restart_steps));
  report.charts.push_back(line_chart(body, "chart-step-time", "Step time per rank", "step",
                                     "seconds", per_rank(d, "step_s"), d.restart_steps));
  report.charts.push_back(line_chart(body, "chart-memory", "Peak memory per rank", "step",
                                     "MiB (peak RSS)", per_rank(d, "peak_rss_mib"),
                                     d.restart_steps));
}

// One heat map of expert load per MoE layer (an empty one when the log has none).
void expert_charts(Report& report, std::string& body, const ChartData& d) {
  if (d.expert.empty()) {
    report.charts.push_back(heat_map(body, 0, {}));
  } else {
    for (const auto& [layer, by_step] : d.expert)
      report.charts.push_back(heat_map(body, layer, by_step));
  }
}

// The header's run lines: model and state, attempts and failures, events and lost time.
std::string run_summary_lines(const supervise::RunSummary& s) {
  std::string out;
  out += "<p>" + esc(s.model) + (s.profile.empty() ? "" : " on " + esc(s.profile)) + "; state <b>" +
         std::string(supervise::to_string(s.state)) + "</b>" +
         (s.exit_code ? " (exit " + std::to_string(*s.exit_code) + ")" : "") + "; step " +
         std::to_string(s.last_step) +
         (s.total_steps ? " of " + std::to_string(s.total_steps) : "") + "</p>\n";
  std::string failures;
  for (const auto& [cls, n] : s.failures)
    failures += (failures.empty() ? "" : ", ") + cls + " " + std::to_string(n);
  out += "<p>attempts " + std::to_string(s.attempt) + ", restarts " + std::to_string(s.restarts) +
         ", requeues " + std::to_string(s.requeues) +
         "; failures: " + (failures.empty() ? "none" : esc(failures)) + "</p>\n";
  out += "<p>OOM " + std::to_string(s.oom_events) + ", EXPERT_IMBALANCE " +
         std::to_string(s.expert_imbalance_events) + ", stragglers " +
         std::to_string(s.straggler_events) + "; lost " +
         esc(supervise::format_duration(s.goodput.lost_at(s.last_time))) + " (" +
         esc(supervise::lost_by_cause(s, s.last_time)) + "), effective " +
         num(100.0 * supervise::effective_ratio(s, s.last_time), 1) + "%</p>\n";
  return out;
}

// The newest hang attribution: the summary, then each group of identical stacks.
std::string hang_report_section(const json& h) {
  const std::string phase = h.value("phase", std::string());
  std::string out = "<p class=\"hang\">hang report, attempt " +
                    std::to_string(h.value("attempt", 0)) +
                    (phase.empty() ? "" : " in " + esc(phase)) + ": " +
                    esc(h.value("summary", std::string())) + "</p>\n<ul class=\"hang-groups\">\n";
  for (const auto& g : h.value("groups", nlohmann::json::array())) {
    std::string ranks;
    for (const auto& r : g.value("ranks", nlohmann::json::array()))
      ranks += (ranks.empty() ? "" : ",") + core::json_text(r);
    out += "<li>rank(s) " + esc(ranks) + ": " +
           esc(supervise::top_frames_text(g.value("frames", nlohmann::json::array()), 6)) +
           "</li>\n";
  }
  out += "</ul>\n";
  return out;
}

// <header>...</header>: the title and what the replayed log says about the run.
std::string report_header(const std::string& title,
                          const core::Result<supervise::RunSummary>& summary) {
  std::string out = "<header>\n<h1>grpo-launch run report</h1>\n<p>" + esc(title) + "</p>\n";
  if (summary.ok()) {
    const auto& s = summary.value();
    out += run_summary_lines(s);
    if (s.hang_report.is_object()) out += hang_report_section(s.hang_report);
  } else {
    out += "<p>event log: " + esc(summary.error().str()) + "</p>\n";
  }
  out += "</header>\n";
  return out;
}

}  // namespace

Report render_report(const std::vector<json>& events, const ReportOptions& options) {
  const ChartData data = collect_chart_data(events);
  const auto summary = supervise::replay(events);
  Report report;
  std::string body;
  training_charts(report, body, data);
  expert_charts(report, body, data);
  report.charts.push_back(timeline(body, events));
  const std::string head = page_head(options.title) + report_header(options.title, summary);
  report.html = head + body + "<footer>generated by grpo-launch " + std::string(GRPO_VERSION) +
                " from events.jsonl (" + std::to_string(events.size()) +
                " events)</footer>\n</body>\n</html>\n";
  return report;
}

Report render_comparison(const std::vector<RunEvents>& runs, const ReportOptions& options) {
  Report report;
  std::string body;
  std::vector<Series> reward, loss, throughput, goodput;
  std::string rows;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string label = "run " + std::to_string(i + 1);
    const auto steps = rank0_steps(runs[i].events);
    auto metric = [&](const char* field) {
      Series s;
      s.name = label;
      for (const auto& [step, e] : steps) {
        if (auto v = get<double>(e, field)) s.points.push_back({static_cast<double>(step), *v});
      }
      return s;
    };
    reward.push_back(metric("reward_mean"));
    loss.push_back(metric("loss"));
    throughput.push_back(metric("tokens_per_s"));
    // Goodput: every rank-0 step event in log order, at its seconds since the run's first event.
    Series g;
    g.name = label;
    std::optional<double> t0;
    for (const auto& e : runs[i].events) {
      const auto t = get<double>(e, "time");
      if (t && !t0) t0 = *t;
      if (get<std::string>(e, "type").value_or("") != core::telemetry::event::kStep ||
          get<int>(e, "rank").value_or(0))
        continue;
      const auto step = get<std::int64_t>(e, "step");
      if (t && step) g.points.push_back({*t - *t0, static_cast<double>(*step)});
    }
    std::stable_sort(g.points.begin(), g.points.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    goodput.push_back(std::move(g));
    const auto summary = supervise::replay(runs[i].events);
    rows += "<p><b style=\"color:" + kPalette[i % kPalette.size()] + "\">" + label + "</b> " +
            esc(runs[i].name);
    if (summary.ok()) {
      const auto& s = summary.value();
      rows += ": " + esc(s.model) + (s.profile.empty() ? "" : " on " + esc(s.profile)) + ", " +
              std::string(supervise::to_string(s.state)) + ", step " + std::to_string(s.last_step) +
              (s.total_steps ? " of " + std::to_string(s.total_steps) : "") + ", restarts " +
              std::to_string(s.restarts) + ", effective " +
              num(100.0 * supervise::effective_ratio(s, s.last_time), 1) + "%";
    } else {
      rows += ": " + esc(summary.error().str());
    }
    rows += "</p>\n";
  }
  report.charts.push_back(
      line_chart(body, "chart-reward", "Reward", "step", "exact-match reward", reward));
  report.charts.push_back(line_chart(body, "chart-loss", "Loss", "step", "loss", loss));
  report.charts.push_back(line_chart(body, "chart-throughput", "Throughput (rank 0)", "step",
                                     "tokens / s", throughput));
  report.charts.push_back(line_chart(body, "chart-goodput",
                                     "Goodput: step reached over wall-clock time",
                                     "seconds since the run started", "step", goodput));
  std::string head = page_head(options.title);
  head += "<header>\n<h1>grpo-launch: " + std::to_string(runs.size()) + " runs compared</h1>\n" +
          rows + "</header>\n";
  std::size_t events = 0;
  for (const auto& r : runs) events += r.events.size();
  report.html = head + body + "<footer>generated by grpo-launch " + std::string(GRPO_VERSION) +
                " from " + std::to_string(runs.size()) + " event logs (" + std::to_string(events) +
                " events)</footer>\n</body>\n</html>\n";
  return report;
}

}  // namespace grpo::report
