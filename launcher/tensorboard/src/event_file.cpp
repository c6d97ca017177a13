// Event messages and the event file writer (docs/tensorboard.md). The only translation unit
// that includes the protocol-buffer code generated from event.proto.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "event.pb.h"
#include "grpo/tensorboard/event_file.h"

namespace grpo::tensorboard {
namespace {

using core::ErrorKind;
using core::make_error;

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

std::string file_version_event(double wall_time) {
  wire::Event ev;
  ev.set_wall_time(wall_time);
  ev.set_step(0);
  ev.set_file_version("brain.Event:2");
  return ev.SerializeAsString();
}

std::string scalars_event(double wall_time, std::int64_t step, const std::vector<Scalar>& scalars) {
  wire::Event ev;
  ev.set_wall_time(wall_time);
  ev.set_step(step);
  wire::Summary* summary = ev.mutable_summary();
  for (const Scalar& s : scalars) {
    wire::Summary::Value* v = summary->add_value();
    v->set_tag(s.tag);
    v->set_simple_value(static_cast<float>(s.value));
  }
  return ev.SerializeAsString();
}

std::string event_file_name(std::int64_t unix_seconds, std::string_view host, long pid,
                            std::string_view suffix) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%010lld", static_cast<long long>(unix_seconds));
  std::string name = "events.out.tfevents.";
  name += secs;
  name += ".";
  name += host;
  name += "." + std::to_string(pid);
  if (!suffix.empty()) name += "." + std::string(suffix);
  return name;
}

core::Result<EventFileWriter> EventFileWriter::create(const std::filesystem::path& dir,
                                                      std::string_view suffix) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorKind::kIo,
                      "cannot create TensorBoard folder " + dir.string() + ": " + ec.message());
  }
  const double now = unix_now();
  const std::string host = host_name();
  // A second writer of this process in the same second gets a counter after the suffix.
  for (int n = 0; n < 100; ++n) {
    std::string sfx(suffix);
    if (n > 0) sfx += "." + std::to_string(n);
    const std::filesystem::path path =
        dir / event_file_name(static_cast<std::int64_t>(now), host, ::getpid(), sfx);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      return make_error(ErrorKind::kIo,
                        "cannot create " + path.string() + ": " + std::strerror(errno));
    }
    EventFileWriter w(path, fd);
    GRPO_TRY_STATUS(w.append(frame_record(file_version_event(now))));
    return w;
  }
  return make_error(ErrorKind::kIo, "cannot create an event file in " + dir.string() +
                                        ": 100 files of this process and second exist");
}

EventFileWriter::EventFileWriter(EventFileWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

EventFileWriter& EventFileWriter::operator=(EventFileWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

core::Status EventFileWriter::write_scalars(std::int64_t step, const std::vector<Scalar>& scalars) {
  if (scalars.empty()) return core::ok_status();
  return append(frame_record(scalars_event(unix_now(), step, scalars)));
}

core::Status EventFileWriter::append(std::string_view record) {
  if (fd_ < 0) return make_error(ErrorKind::kIo, "event file is closed: " + path_.string());
  std::size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return make_error(ErrorKind::kIo,
                        "cannot write " + path_.string() + ": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return core::ok_status();
}

}  // namespace grpo::tensorboard
