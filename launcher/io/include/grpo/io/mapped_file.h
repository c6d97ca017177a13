// A whole file memory-mapped read-only (mmap, MAP_PRIVATE): model weights are read in place, never
// copied into a buffer first. Move-only; unmapped on destruction.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

#include "grpo/core/result.h"

namespace grpo::io {

class MappedFile {
 public:
  // Errors: kNotFound (no such file), kIo (not a regular file, cannot open or map).
  static core::Result<MappedFile> open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes (empty for an empty file).
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void reset();
  std::filesystem::path path_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace grpo::io
