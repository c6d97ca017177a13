// The event log's file: reading it whole and appending to it (docs/supervisor.md "Event log").
// What a log means (parse_event_log, apply_event, replay) is the pure grpo_runlog.
#include "grpo/supervise/event_log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "grpo/core/json_text.h"

namespace grpo::supervise {
namespace {

using core::ErrorKind;
using core::make_error;
using nlohmann::json;

// The seq of a log's last event; 0 when it has none or it is not a number.
std::int64_t last_seq(const json& e) {
  if (!e.contains("seq")) return 0;
  try {
    return e.at("seq").get<std::int64_t>();
  } catch (const json::exception&) {
    return 0;
  }
}

}  // namespace

core::Result<LogContents> read_event_log(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorKind::kNotFound, "cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_event_log(ss.str(), path.string());
}

EventLogWriter::EventLogWriter(int fd, std::int64_t seq, std::filesystem::path path)
    : fd_(fd), seq_(seq), path_(std::move(path)) {}

EventLogWriter::EventLogWriter(EventLogWriter&& o) noexcept
    : fd_(o.fd_), seq_(o.seq_), unsynced_(o.unsynced_), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

EventLogWriter& EventLogWriter::operator=(EventLogWriter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    seq_ = o.seq_;
    unsynced_ = o.unsynced_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

EventLogWriter::~EventLogWriter() {
  if (fd_ >= 0 && unsynced_) ::fdatasync(fd_);
  if (fd_ >= 0) ::close(fd_);
}

core::Result<EventLogWriter> EventLogWriter::open(const std::filesystem::path& path) {
  std::int64_t seq = 0;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    GRPO_TRY(LogContents existing, read_event_log(path));
    if (!existing.events.empty()) seq = last_seq(existing.events.back()) + 1;
    if (existing.torn) {
      // Drop the torn line (the writer died in the middle of it): the next event starts on a
      // line of its own and the log stays readable.
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      const auto nl = text.rfind('\n');
      const auto keep = nl == std::string::npos ? 0 : nl + 1;
      if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) {
        return make_error(ErrorKind::kIo, "cannot cut the torn last line of " + path.string() +
                                              ": " + std::strerror(errno));
      }
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(ErrorKind::kIo, "cannot open " + path.string() + ": " + std::strerror(errno));
  return EventLogWriter(fd, seq, path);
}

core::Status EventLogWriter::sync() {
  if (unsynced_ && fd_ >= 0) ::fdatasync(fd_);
  unsynced_ = false;
  return core::ok_status();
}

core::Status EventLogWriter::append(const std::string& type, json fields, double time, bool sync) {
  if (!fields.is_object()) fields = json::object();
  fields["schema"] = kEventSchema;
  fields["seq"] = seq_;
  fields["time"] = time;
  fields["type"] = type;
  const std::string line = core::json_text(fields) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorKind::kIo,
                        "cannot append to " + path_.string() + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  ++seq_;
  unsynced_ = true;
  if (sync) return this->sync();
  return core::ok_status();
}

}  // namespace grpo::supervise
