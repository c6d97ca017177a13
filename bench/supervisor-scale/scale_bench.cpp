// The supervisor at the scale users outgrow us to: the real Supervisor (monitor, failure
// classification, event log, summary) fed synthetic telemetry of N ranks as one srun step
// delivers it (srun --label lines, parsed by the runner's own parse_label/parse_event_line),
// under a fake clock. Measured: the supervisor's CPU per simulated wall second (the generator's
// own CPU subtracted), its memory, the event log's bytes per day, and the time from a rank's
// last heartbeat to the hang decision. bench/supervisor-scale/RESULTS.md.
//
//   scale_bench --ranks 8192 [--seconds 300] [--step-s 10] [--moe-layers 48] [--experts 128]
//
// Every rank sends a heartbeat every second (phase rollout in the first half of a step, update
// in the second) and a step event per step (the fields grpo-trainer sends, ~520 bytes); rank 0
// sends one expert_load event per MoE layer per step. At `--seconds` rank N/2 falls silent; the
// run ends when the supervisor kills the attempt for it (one attempt, no restart budget).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grpo/process/signals.h"
#include "grpo/supervise/output_parsing.h"
#include "grpo/supervise/supervisor.h"
#include "grpo/test_support/fake_clock.h"
#include "grpo/test_support/fake_job_control.h"
#include "grpo/test_support/fake_signals.h"

namespace {

namespace fs = std::filesystem;
using namespace grpo::supervise;

double thread_cpu() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Settings {
  int ranks = 1024;
  double seconds = 300;  // simulated seconds before the hang
  double step_s = 10;
  int moe_layers = 48;
  int experts = 128;
};

// One srun step's stdout, synthesised: what `srun --label` would deliver in each poll window.
class SyntheticRunner final : public AttemptRunner {
 public:
  SyntheticRunner(FakeClock& clock, Settings s) : clock_(clock), s_(s) {
    width_ = static_cast<int>(std::to_string(s_.ranks - 1).size());
  }
  std::string_view kind() const override { return "synthetic"; }
  grpo::core::Status start(const AttemptSpec& spec) override {
    fs::create_directories(spec.log_dir);
    t0_ = clock_.now();
    active_ = true;
    return grpo::core::ok_status();
  }
  grpo::core::Result<std::vector<AttemptEvent>> poll(double timeout_s) override {
    std::vector<AttemptEvent> out;
    if (!active_) {
      clock_.advance(timeout_s);
      return out;
    }
    if (killed_) {
      active_ = false;
      out.emplace_back(std::in_place_type<AttemptExit>, AttemptExit{Signaled{SIGKILL}});
      return out;
    }
    const double from = clock_.now() - t0_;
    clock_.advance(timeout_s);
    const double to = clock_.now() - t0_;
    const double g0 = thread_cpu();
    std::vector<std::string> lines;
    emit(from, to, lines);
    generator_cpu_ += thread_cpu() - g0;
    for (const auto& l : lines) {  // what SrunRunner::drain does with a stdout line
      if (auto lab = parse_label(l)) {
        auto event = parse_event_line(lab->text);
        out.emplace_back(std::in_place_type<RankOutput>,
                         RankOutput{lab->rank, std::string(lab->text), std::move(event)});
      }
    }
    lines_ += lines.size();
    return out;
  }
  grpo::core::Status signal(int) override { return grpo::core::ok_status(); }
  grpo::core::Status kill() override {
    if (!killed_) killed_at_ = clock_.now() - t0_;
    killed_ = true;
    return grpo::core::ok_status();
  }
  bool active() const override { return active_; }
  std::vector<std::string> nodes() const override { return {"localhost"}; }

  double generator_cpu() const { return generator_cpu_; }
  double killed_at() const { return killed_at_; }
  double last_beat_of_hung() const { return last_hung_beat_; }
  std::size_t lines() const { return lines_; }

 private:
  // Every event whose time t (seconds since start) is in (from, to].
  void emit(double from, double to, std::vector<std::string>& lines) {
    const int hung = s_.ranks / 2;
    for (int r = 0; r < s_.ranks; ++r) {
      // Heartbeats at r*phi mod 1 + k, so they spread over the second.
      const double off = std::fmod(r * 0.6180339887, 1.0);
      for (double k = std::ceil(from - off); k + off <= to; k += 1) {
        const double t = k + off;
        if (t <= from) continue;
        if (r == hung && t > s_.seconds) continue;
        if (r == hung) last_hung_beat_ = t;
        const auto step = static_cast<long>(t / s_.step_s) + 1;
        const bool update = std::fmod(t, s_.step_s) > s_.step_s / 2;
        lines.push_back(label(r, heartbeat(r, step, update ? "update" : "rollout", t)));
      }
      // Step events at the end of each step, a few ms apart per rank.
      const double jitter = 1e-6 * r;
      for (double k = std::ceil((from - jitter) / s_.step_s); k * s_.step_s + jitter <= to;
           k += 1) {
        const double t = k * s_.step_s + jitter;
        if (t <= from || k < 1) continue;
        if (r == hung && t > s_.seconds) continue;
        lines.push_back(label(r, step_event(r, static_cast<long>(k), t)));
        if (r == 0) {
          for (int layer = 0; layer < s_.moe_layers; ++layer) {
            lines.push_back(label(r, expert_load(static_cast<long>(k), layer, t)));
          }
        }
      }
    }
  }
  std::string label(int rank, const std::string& text) const {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%*d: ", width_, rank);
    return buf + text;
  }
  std::string heartbeat(int r, long step, const char* phase, double t) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "{\"schema\":1,\"seq\":%ld,\"time\":%.6f,\"type\":\"heartbeat\",\"rank\":%d,"
                  "\"step\":%ld,\"phase\":\"%s\"}",
                  ++seq_, 1.8e9 + t, r, step, phase);
    return buf;
  }
  std::string step_event(int r, long step, double t) {
    char buf[768];
    const double step_s = s_.step_s * (0.9 + 0.01 * (r % 7));
    std::snprintf(
        buf, sizeof buf,
        "{\"attempt\":1,\"aux_loss\":1.0123,\"comm_s\":%.6f,\"data_cursor\":%ld,"
        "\"grad_norm\":0.8123,\"grpo_step\":%ld,\"lr\":1e-06,\"peak_rss_mib\":%.3f,\"phase\":"
        "\"grpo\",\"pid\":%d,\"rank\":%d,\"schema\":1,\"seq\":%ld,\"loss\":0.01234,\"reward\":"
        "0.4567,\"kl\":0.00123,\"entropy\":1.234,\"clip_fraction\":0.0123,\"step\":%ld,"
        "\"step_s\":%.6f,\"time\":%.6f,\"tokens\":65536,\"tokens_per_s\":%.3f,\"type\":\"step\","
        "\"update_s\":%.6f,\"wall_s\":%.6f,\"world_size\":%d}",
        0.1 * step_s, step * 256, step, 60000.0 + r % 13, 1000 + r, r, ++seq_, step, step_s,
        1.8e9 + t, 65536 / step_s, 0.5 * step_s, step_s, s_.ranks);
    return buf;
  }
  std::string expert_load(long step, int layer, double t) {
    std::string loads;
    for (int e = 0; e < s_.experts; ++e) {
      loads += (e ? "," : "") + std::to_string(4096 + (e * 37 + layer) % 512);
    }
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "{\"schema\":1,\"seq\":%ld,\"time\":%.6f,\"type\":\"expert_load\",\"rank\":0,"
                  "\"step\":%ld,\"layer\":%d,\"imbalance\":1.12,\"loads\":[",
                  ++seq_, 1.8e9 + t, step, layer);
    return buf + loads + "]}";
  }

  FakeClock& clock_;
  Settings s_;
  int width_ = 1;
  double t0_ = 0;
  bool active_ = false;
  bool killed_ = false;
  double killed_at_ = -1;
  double last_hung_beat_ = -1;
  double generator_cpu_ = 0;
  std::size_t lines_ = 0;
  long seq_ = 0;
};

long max_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

int usage() {
  std::fprintf(stderr,
               "usage: scale_bench --ranks N [--seconds S] [--step-s S] [--moe-layers L] "
               "[--experts E]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const double v = std::atof(argv[i + 1]);
    if (k == "--ranks") {
      s.ranks = static_cast<int>(v);
    } else if (k == "--seconds") {
      s.seconds = v;
    } else if (k == "--step-s") {
      s.step_s = v;
    } else if (k == "--moe-layers") {
      s.moe_layers = static_cast<int>(v);
    } else if (k == "--experts") {
      s.experts = static_cast<int>(v);
    } else {
      return usage();
    }
  }
  if (argc % 2 == 0 || s.ranks < 2) return usage();
  spdlog::set_level(spdlog::level::warn);

  const fs::path dir =
      fs::temp_directory_path() / ("grpo-scale-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  FakeClock clock;
  SyntheticRunner runner(clock, s);
  grpo::process::FakeSignals signals;
  FakeJobControl job;
  job.slurm = false;
  NullStatusSink status;
  SupervisorOptions o;
  o.run_dir = dir;
  o.profile = "bench";
  o.model = "synthetic";
  o.trainer_argv = {"grpo-trainer"};
  o.nodes = s.ranks / 8;
  o.ranks_per_node = 8;
  o.config.total_steps = 1000000;
  o.config.budget.max_restarts = 0;
  o.poll_s = 0.1;

  const long rss0 = max_rss_kib();
  SupervisorDeps deps{runner, clock, signals, job, status, [] { return std::int64_t{-1}; },
                      nullptr};
  auto sup = Supervisor::open(o, deps);
  if (!sup.ok()) {
    std::fprintf(stderr, "%s\n", sup.error().str().c_str());
    return 1;
  }
  const double c0 = thread_cpu();
  auto code = (*sup)->run();
  const double cpu = thread_cpu() - c0 - runner.generator_cpu();
  if (!code.ok()) {
    std::fprintf(stderr, "%s\n", code.error().str().c_str());
    return 1;
  }
  const double sim = runner.killed_at();
  const auto log_bytes = fs::file_size(dir / "events.jsonl");
  const double per_day = static_cast<double>(log_bytes) / sim * 86400.0;
  nlohmann::json r = {
      {"ranks", s.ranks},
      {"step_s", s.step_s},
      {"simulated_s", sim},
      {"lines", runner.lines()},
      {"supervisor_cpu_s", cpu},
      {"generator_cpu_s", runner.generator_cpu()},
      {"cpu_per_wall_s", cpu / sim},
      {"max_rss_mib", static_cast<double>(max_rss_kib()) / 1024.0},
      {"rss_growth_mib", static_cast<double>(max_rss_kib() - rss0) / 1024.0},
      {"event_log_bytes", log_bytes},
      {"event_log_gib_per_day", per_day / (1024.0 * 1024.0 * 1024.0)},
      {"last_heartbeat_to_hang_decision_s", runner.killed_at() - runner.last_beat_of_hung()},
      {"exit", code.value()},
  };
  std::printf("%s\n", r.dump().c_str());
  fs::remove_all(dir);
  return 0;
}
