// The header of a safetensors file (https://huggingface.co/docs/safetensors: 8 bytes little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__": {...}}, then the data section), checked completely before anything is
// allocated from it. Pure: the caller gives the file's bytes (a memory map,
// docs/hf-checkpoints.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

// The dtypes read and written: the floating ones Hugging Face checkpoints of our models use, and
// those grpo-trainer's own checkpoints add (optimizer steps, RNG states).
enum class TensorDtype { kF32, kF16, kBF16, kF64, kI64, kI32, kU8, kBool };
std::string_view to_string(TensorDtype dtype);  // "F32", "BF16", "BOOL", ...
std::size_t dtype_size(TensorDtype dtype);
// F32, F16 and BF16: what a model's weights may be.
bool is_weight_dtype(TensorDtype dtype);

struct SafetensorsEntry {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets into the data section
  std::uint64_t end = 0;
  std::int64_t numel() const;
};

struct SafetensorsHeader {
  std::uint64_t data_start = 0;                 // 8 + N: where the data section begins in the file
  std::vector<SafetensorsEntry> tensors;        // sorted by name
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values only)
};

// The largest header accepted (the safetensors library's limit: 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// Parses and checks the header of `file` (the file's whole contents). Checks: the file holds the
// 8-byte length; N <= kMaxSafetensorsHeader and 8 + N <= the file size; the header is a JSON
// object of entries with one of the TensorDtype names, a shape of non-negative integers whose
// product times the dtype size equals end - begin (no overflow), begin <= end <= the data section's
// size, and no two entries' byte ranges overlap. Errors: kParse, one line starting with
// `file_name`.
Result<SafetensorsHeader> parse_safetensors_header(std::string_view file,
                                                   std::string_view file_name);

}  // namespace grpo::core
