// TensorBoard event files: the TFRecord framing, the Event messages of scalar summaries, and a
// writer that appends them to events.out.tfevents.* files (docs/tensorboard.md). No LibTorch,
// no Slurm: the trainer and the supervisor both write through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::tensorboard {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF):
// crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::string_view data);

// TensorFlow's masked CRC of a record part: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
std::uint32_t masked_crc32c(std::string_view data);

// One TFRecord: the data's length as uint64 little-endian, the masked CRC of those 8 bytes
// (uint32 LE), the data, the masked CRC of the data (uint32 LE).
std::string frame_record(std::string_view data);

struct Scalar {
  std::string tag;
  double value = 0;  // stored as TensorBoard's simple_value, a 32-bit float
};

// Serialized Event messages (the payload of one record).
std::string file_version_event(double wall_time);  // file_version "brain.Event:2", step 0
std::string scalars_event(double wall_time, std::int64_t step, const std::vector<Scalar>& scalars);

// "events.out.tfevents.<unix seconds, 10 digits>.<host>.<pid>.<suffix>"; TensorBoard reads every
// file with "tfevents" in its name, and the pid and suffix keep two writers in one folder apart.
std::string event_file_name(std::int64_t unix_seconds, std::string_view host, long pid,
                            std::string_view suffix);

// Appends records to a new event file. Each record is written with one write(2), so a reader
// (or a crash) sees whole records, and at most the last one cut short, which TensorBoard skips.
class EventFileWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it named by event_file_name with
  // this host, pid and the current time, and writes the file_version record. Errors: kIo.
  static core::Result<EventFileWriter> create(const std::filesystem::path& dir,
                                              std::string_view suffix);

  EventFileWriter(EventFileWriter&& other) noexcept;
  EventFileWriter& operator=(EventFileWriter&& other) noexcept;
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;
  ~EventFileWriter();

  // One Event with every scalar as a Summary.Value, at `step`, stamped with the current time.
  // Nothing is written for an empty list. Errors: kIo.
  core::Status write_scalars(std::int64_t step, const std::vector<Scalar>& scalars);

  const std::filesystem::path& path() const { return path_; }

 private:
  EventFileWriter(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  core::Status append(std::string_view record);

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace grpo::tensorboard
