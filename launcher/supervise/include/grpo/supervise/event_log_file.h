// The event log's file: reading it and appending to it with one write(2) per event.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "grpo/core/result.h"
#include "grpo/runlog/event_log.h"

namespace grpo::supervise {

// Reads a log file whole: parse_event_log of its text.
core::Result<LogContents> read_event_log(const std::filesystem::path& path);

// Appends events to the log: each line is written with one write(2) on an O_APPEND descriptor,
// so a reader sees whole lines, and fdatasync'd (forwarded trainer events are synced in batches:
// sync = false, then sync()). seq continues from the log's last event.
class EventLogWriter {
 public:
  static core::Result<EventLogWriter> open(const std::filesystem::path& path);
  EventLogWriter(EventLogWriter&&) noexcept;
  EventLogWriter& operator=(EventLogWriter&&) noexcept;
  EventLogWriter(const EventLogWriter&) = delete;
  EventLogWriter& operator=(const EventLogWriter&) = delete;
  ~EventLogWriter();

  // Adds schema, seq and time (seconds since the epoch) to `fields` and appends it.
  core::Status append(const std::string& type, nlohmann::json fields, double time,
                      bool sync = true);
  // fdatasync of what append(..., false) wrote since the last sync.
  core::Status sync();
  std::int64_t next_seq() const { return seq_; }

 private:
  EventLogWriter(int fd, std::int64_t seq, std::filesystem::path path);
  int fd_ = -1;
  std::int64_t seq_ = 0;
  bool unsynced_ = false;
  std::filesystem::path path_;
};

}  // namespace grpo::supervise
