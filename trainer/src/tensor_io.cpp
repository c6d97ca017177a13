#include "grpo/trainer/tensor_io.h"
#include "grpo/core/json_text.h"

#include <cstdint>
#include <cstring>

#include <nlohmann/json.hpp>

#include "grpo/trainer/sha256.h"

namespace grpo::trainer {
namespace {

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kFloat, "F32"}, {at::kDouble, "F64"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"},
    {at::kLong, "I64"},  {at::kInt, "I32"},    {at::kByte, "U8"},  {at::kBool, "BOOL"},
};

const char* dtype_name(at::ScalarType t) {
  for (const auto& d : kDtypes) {
    if (d.type == t) return d.name;
  }
  return nullptr;
}

at::Tensor cpu_contiguous(const at::Tensor& t) {
  return t.detach().to(at::kCPU).contiguous();
}

}  // namespace

std::string to_safetensors(const NamedTensors& tensors,
                           const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> data;
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = cpu_contiguous(t);
    const std::size_t bytes = c.numel() * c.element_size();
    const char* dt = dtype_name(c.scalar_type());
    TORCH_CHECK(dt != nullptr, "to_safetensors: unsupported dtype for ", name);
    header[name] = {
        {"dtype", dt}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
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

// Parses the header and makes each tensor: a copy of its bytes, or (`view`) an alias of them.
core::Result<NamedTensors> read_safetensors(std::string_view bytes, bool view) {
  auto bad = [](const std::string& why) {
    return core::make_error(core::ErrorKind::kParse, "safetensors: " + why);
  };
  if (bytes.size() < 8) return bad("file shorter than its header length");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) {
    n |= std::uint64_t(static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)])) << (8 * i);
  }
  if (n > bytes.size() - 8) return bad("header length past the end of the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("header does not parse: ") + e.what());
  }
  const std::string_view body = bytes.substr(8 + n);
  // Keep the file's data order (offsets), which is the order it was written in.
  std::vector<std::pair<std::size_t, std::string>> order;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    if (!entry.contains("data_offsets")) return bad(name + ": no data_offsets");
    order.emplace_back(entry["data_offsets"][0].get<std::size_t>(), name);
  }
  std::sort(order.begin(), order.end());
  NamedTensors out;
  for (const auto& [begin, name] : order) {
    const auto& entry = header[name];
    const std::string dt = entry.value("dtype", "");
    at::ScalarType type = at::kFloat;
    bool known = false;
    for (const auto& d : kDtypes) {
      if (dt == d.name) {
        type = d.type;
        known = true;
      }
    }
    if (!known) return bad(name + ": unknown dtype '" + dt + "'");
    std::vector<std::int64_t> shape = entry.value("shape", std::vector<std::int64_t>{});
    const std::size_t end = entry["data_offsets"][1].get<std::size_t>();
    const auto opts = at::TensorOptions().dtype(type);
    std::size_t want = c10::elementSize(type);
    for (const std::int64_t d : shape) {
      if (d < 0) return bad(name + ": negative dimension");
      if (d > 0 && want > body.size() / static_cast<std::size_t>(d)) {
        return bad(name + ": data_offsets do not match the shape or the file size");
      }
      want *= static_cast<std::size_t>(d);
    }
    if (end < begin || end > body.size() || end - begin != want) {
      return bad(name + ": data_offsets do not match the shape or the file size");
    }
    const char* data = body.data() + begin;
    const bool aligned = reinterpret_cast<std::uintptr_t>(data) % c10::elementSize(type) == 0;
    if (view && aligned && want > 0) {
      out.emplace_back(name, at::from_blob(const_cast<char*>(data), shape, opts));
      continue;
    }
    at::Tensor t = at::empty(shape, opts);
    if (want > 0) std::memcpy(t.data_ptr(), data, want);
    out.emplace_back(name, std::move(t));
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
