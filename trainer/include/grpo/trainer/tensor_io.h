// Named tensors to and from the safetensors format (an 8-byte little-endian header length, a
// JSON header of {name: {dtype, shape, data_offsets}} and "__metadata__", then raw bytes).
// Independent of LibTorch's own pickle format, so checkpoints read the same in 1.13 and 2.x and
// from Python's safetensors package.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/hf/safetensors_header.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The LibTorch type of a safetensors dtype, and back (nullopt: a type safetensors files here do
// not hold).
at::ScalarType scalar_type(core::TensorDtype dtype);
std::optional<core::TensorDtype> tensor_dtype(at::ScalarType type);

// Tensors are written in the given order (CPU copies of contiguous data).
std::string to_safetensors(const NamedTensors& tensors,
                           const std::map<std::string, std::string>& metadata = {});
// The file is checked by core::parse_safetensors_header, the one reader of the format, before a
// tensor is made. Errors: kParse for a malformed file (bad header, offsets out of range, unknown
// dtype).
core::Result<NamedTensors> from_safetensors(std::string_view bytes);
// The same tensors without copying their data: each one aliases `bytes` (a copy only where the
// data is not aligned to its element size), so `bytes` must outlive them unchanged, e.g. a
// verified checkpoint file's mapping. Read them only (copy_ from them). Errors: as above.
core::Result<NamedTensors> view_safetensors(std::string_view bytes);

// SHA-256 over every tensor's name and raw bytes, in order: equal iff byte-identical weights.
std::string tensors_sha256(const NamedTensors& tensors);

}  // namespace grpo::trainer
