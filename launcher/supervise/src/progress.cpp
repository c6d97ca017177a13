#include "grpo/supervise/progress.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "grpo/io/files.h"
#include "grpo/runlog/run_view.h"

namespace grpo::supervise {

ConsoleStatus::ConsoleStatus(std::filesystem::path run_dir, std::string run_name, bool tty,
                             std::FILE* out, double plain_interval_s, double metrics_interval_s)
    : run_dir_(std::move(run_dir)),
      run_name_(std::move(run_name)),
      tty_(tty),
      out_(out),
      plain_interval_s_(plain_interval_s),
      metrics_interval_s_(metrics_interval_s) {}

void ConsoleStatus::hide() {
  if (tty_ && shown_) {
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
  }
}

void ConsoleStatus::show() {
  if (tty_ && shown_) {
    std::fputs(("\r" + line_ + "\x1b[K").c_str(), out_);
    std::fflush(out_);
  }
}

void ConsoleStatus::write_metrics(const RunSummary& s) {
  const auto st =
      io::write_file_atomic(run_dir_ / "metrics.prom", render_prometheus(s, run_name_), 0644);
  if (!st.ok()) spdlog::debug("metrics.prom: {}", st.error().message);
}

void ConsoleStatus::update(const RunSummary& s, double wall) {
  line_ = progress_line(s, wall);
  const std::string state(to_string(s.state));
  if (tty_) {
    shown_ = true;
    show();
  } else if (wall - last_plain_ >= plain_interval_s_ || state != last_state_) {
    last_plain_ = wall;
    printed_ = line_;
    std::fprintf(out_, "%s\n", line_.c_str());
    std::fflush(out_);
  }
  last_state_ = state;
  if (wall - last_metrics_ >= metrics_interval_s_) {
    last_metrics_ = wall;
    write_metrics(s);
  }
}

void ConsoleStatus::finish(const RunSummary& s, double wall) {
  line_ = progress_line(s, wall);
  if (tty_) {
    std::fprintf(out_, "\r%s\x1b[K\n", line_.c_str());
    shown_ = false;
  } else if (line_ != printed_) {
    printed_ = line_;
    std::fprintf(out_, "%s\n", line_.c_str());
  }
  std::fflush(out_);
  write_metrics(s);
}

namespace {

// stderr, with the status line taken off the terminal around each message.
class StatusAwareSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit StatusAwareSink(ConsoleStatus* status) : status_(status) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    if (status_ != nullptr) status_->hide();
    std::fwrite(buf.data(), 1, buf.size(), stderr);
    std::fflush(stderr);
    if (status_ != nullptr) status_->show();
  }
  void flush_() override { std::fflush(stderr); }

 private:
  ConsoleStatus* status_;
};

}  // namespace

void install_logger(const std::string& level, ConsoleStatus* status) {
  auto logger =
      std::make_shared<spdlog::logger>("grpo-launch", std::make_shared<StatusAwareSink>(status));
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %L %v");
  logger->set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
  spdlog::set_default_logger(logger);
}

}  // namespace grpo::supervise
