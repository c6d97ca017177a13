// A Hugging Face checkpoint directory's weights, memory-mapped (docs/hf-checkpoints.md):
// model.safetensors, or the shards model.safetensors.index.json names in its weight_map. Every
// header is checked (core/safetensors_header.h) before any tensor is touched. LibTorch-free: the
// trainer turns the mapped bytes into tensors (hf_weights.h).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/hf/safetensors_header.h"
#include "grpo/io/mapped_file.h"

namespace grpo::trainer {

struct HfTensor {
  core::SafetensorsEntry entry;  // name, dtype, shape
  const char* data = nullptr;    // entry.end - entry.begin bytes inside a mapped file
  std::string file;              // the shard it lives in (for error messages)
};

class HfCheckpoint {
 public:
  // Errors (one line naming the file): kNotFound (neither model.safetensors nor the index),
  // kParse (a bad header or index: see parse_safetensors_header), kInvalidValue (the index names
  // a shard outside the directory, a tensor missing from its shard, or a tensor in two shards).
  static core::Result<HfCheckpoint> open(const std::filesystem::path& dir);

  // By name.
  const std::map<std::string, HfTensor>& tensors() const { return tensors_; }

 private:
  std::vector<std::unique_ptr<io::MappedFile>> files_;
  std::map<std::string, HfTensor> tensors_;
};

}  // namespace grpo::trainer
