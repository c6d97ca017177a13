#include "grpo/trainer/tensor_io.h"
#include "grpo/core/json_text.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <nlohmann/json.hpp>

#include "grpo/trainer/sha256.h"

namespace grpo::trainer {
namespace {

struct DtypePair {
  core::TensorDtype dtype;
  at::ScalarType type;
};
constexpr DtypePair kDtypes[] = {
    {core::TensorDtype::kF32, at::kFloat}, {core::TensorDtype::kF64, at::kDouble},
    {core::TensorDtype::kF16, at::kHalf},  {core::TensorDtype::kBF16, at::kBFloat16},
    {core::TensorDtype::kI64, at::kLong},  {core::TensorDtype::kI32, at::kInt},
    {core::TensorDtype::kU8, at::kByte},   {core::TensorDtype::kBool, at::kBool},
};

at::Tensor cpu_contiguous(const at::Tensor& t) {
  return t.detach().to(at::kCPU).contiguous();
}

}  // namespace

at::ScalarType scalar_type(core::TensorDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.type;
  }
  return at::kFloat;  // unreachable: every TensorDtype is in the table
}

std::optional<core::TensorDtype> tensor_dtype(at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.dtype;
  }
  return std::nullopt;
}

std::string to_safetensors(const NamedTensors& tensors,
                           const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = cpu_contiguous(t);
    const std::size_t bytes = c.numel() * c.element_size();
    const auto dt = tensor_dtype(c.scalar_type());
    TORCH_CHECK(dt.has_value(), "to_safetensors: unsupported dtype for ", name);
    header[name] = {{"dtype", std::string(core::to_string(*dt))},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(c));
  }
  std::string h = core::json_text(header);
  while (h.size() % 8 != 0) h += ' ';
  std::string out(8, '\0');
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += h;
  out.reserve(out.size() + offset);
  for (const at::Tensor& c : data) {
    out.append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
  }
  return out;
}

namespace {

// Checks the file with the one safetensors reader, then makes each tensor, in the file's data
// order (the order it was written in): a copy of its bytes, or (`view`) an alias of them.
core::Result<NamedTensors> read_safetensors(std::string_view bytes, bool view) {
  // No file name here (the caller names the file in its own message): the error is the reason.
  GRPO_TRY(core::SafetensorsHeader header, core::parse_safetensors_header(bytes, ""));
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  NamedTensors out;
  out.reserve(header.tensors.size());
  const char* base = bytes.data() + header.data_start;
  for (const core::SafetensorsEntry& e : header.tensors) {
    const auto type = scalar_type(e.dtype);
    const auto opts = at::TensorOptions().dtype(type);
    const char* data = base + e.begin;
    const auto want = static_cast<std::size_t>(e.end - e.begin);
    const bool aligned = reinterpret_cast<std::uintptr_t>(data) % c10::elementSize(type) == 0;
    if (view && aligned && want > 0) {
      out.emplace_back(e.name, at::from_blob(const_cast<char*>(data), e.shape, opts));
      continue;
    }
    at::Tensor t = at::empty(e.shape, opts);
    if (want > 0) std::memcpy(t.data_ptr(), data, want);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace

core::Result<NamedTensors> from_safetensors(std::string_view bytes) {
  return read_safetensors(bytes, false);
}

core::Result<NamedTensors> view_safetensors(std::string_view bytes) {
  return read_safetensors(bytes, true);
}

std::string tensors_sha256(const NamedTensors& tensors) {
  Sha256 h;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = cpu_contiguous(t);
    h.update(name);
    h.update(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
  }
  return h.hex_digest();
}

}  // namespace grpo::trainer
