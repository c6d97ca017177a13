#include "grpo/hf/safetensors_header.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

namespace grpo::core {
namespace {

using nlohmann::json;

struct DtypeInfo {
  TensorDtype dtype;
  const char* name;
  std::size_t size;
};
constexpr DtypeInfo kDtypes[] = {{TensorDtype::kF32, "F32", 4},   {TensorDtype::kF16, "F16", 2},
                                 {TensorDtype::kBF16, "BF16", 2}, {TensorDtype::kF64, "F64", 8},
                                 {TensorDtype::kI64, "I64", 8},   {TensorDtype::kI32, "I32", 4},
                                 {TensorDtype::kU8, "U8", 1},     {TensorDtype::kBool, "BOOL", 1}};

Error bad(std::string_view file, const std::string& why) {
  return make_error(ErrorKind::kParse, "safetensors: " + why, {std::string(file), 0, 0});
}

// One entry of the header, checked against the data section of `data_size` bytes.
Result<SafetensorsEntry> read_entry(const std::string& name, const json& v, std::uint64_t data_size,
                                    std::string_view file) {
  const std::string what = "tensor '" + name + "': ";
  if (!v.is_object()) return bad(file, what + "expected an object");
  const auto dt = v.find("dtype");
  const auto sh = v.find("shape");
  const auto off = v.find("data_offsets");
  if (dt == v.end() || sh == v.end() || off == v.end()) {
    return bad(file, what + "needs dtype, shape and data_offsets");
  }
  SafetensorsEntry e;
  e.name = name;
  if (!dt->is_string()) return bad(file, what + "dtype is not a string");
  const std::string dtype = dt->get<std::string>();
  const auto info = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                 [&](const DtypeInfo& d) { return dtype == d.name; });
  if (info == std::end(kDtypes)) {
    return bad(file, what + "dtype '" + dtype +
                         "' is not supported (F32, F16, BF16, F64, I64, I32, U8, BOOL)");
  }
  e.dtype = info->dtype;
  if (!sh->is_array() || sh->size() > 8)
    return bad(file, what + "shape is not a list of <= 8 sizes");
  // The product is bounded by the data section's size, so checking each step against it cannot
  // overflow: count <= data_size <= 2^63 and each dim <= 2^63.
  std::uint64_t count = 1;
  const bool empty = std::any_of(sh->begin(), sh->end(), [](const json& d) {
    return d.is_number_integer() && d.get<std::int64_t>() == 0;
  });
  for (const json& d : *sh) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<std::int64_t>() >= 0)) {
      return bad(file, what + "shape holds something other than a non-negative integer");
    }
    const std::uint64_t x = d.get<std::uint64_t>();
    if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return bad(file, what + "a dimension is too large");
    }
    e.shape.push_back(static_cast<std::int64_t>(x));
    if (!empty) {
      if (count > data_size / x) return bad(file, what + "shape is larger than the file");
      count *= x;
    }
  }
  if (empty) count = 0;
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return bad(file, what + "data_offsets is not [begin, end] of non-negative integers");
  }
  e.begin = (*off)[0].get<std::uint64_t>();
  e.end = (*off)[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_size) {
    return bad(file, what + "data_offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + "] are outside the data section of " +
                         std::to_string(data_size) + " bytes (truncated file?)");
  }
  if (count > data_size / info->size || count * info->size != e.end - e.begin) {
    return bad(
        file, what + "shape and dtype make " +
                  (count > data_size / info->size ? std::string("more bytes than the file holds")
                                                  : std::to_string(count * info->size) + " bytes") +
                  " but data_offsets span " + std::to_string(e.end - e.begin));
  }
  return e;
}

}  // namespace

std::string_view to_string(TensorDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

std::size_t dtype_size(TensorDtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

bool is_weight_dtype(TensorDtype dtype) {
  return dtype == TensorDtype::kF32 || dtype == TensorDtype::kF16 || dtype == TensorDtype::kBF16;
}

std::int64_t SafetensorsEntry::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsHeader> parse_safetensors_header(std::string_view file,
                                                   std::string_view file_name) {
  if (file.size() < 8) {
    return bad(file_name, "file of " + std::to_string(file.size()) +
                              " bytes is shorter than the 8-byte header length");
  }
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) {
    n |= std::uint64_t(static_cast<unsigned char>(file[static_cast<std::size_t>(i)])) << (8 * i);
  }
  if (n > kMaxSafetensorsHeader) {
    return bad(file_name, "header length " + std::to_string(n) + " is over the 100 MB limit");
  }
  if (n > file.size() - 8) {
    return bad(file_name, "header length " + std::to_string(n) + " runs past the end of the " +
                              std::to_string(file.size()) + "-byte file (truncated file?)");
  }
  json header;
  try {
    header = json::parse(file.substr(8, n));
  } catch (const json::exception& e) {
    std::string why = e.what();
    if (const auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
    return bad(file_name, "header is not valid JSON: " + why);
  }
  if (!header.is_object()) return bad(file_name, "header is not a JSON object");
  SafetensorsHeader out;
  out.data_start = 8 + n;
  const std::uint64_t data_size = file.size() - out.data_start;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return bad(file_name, "__metadata__ is not an object");
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) return bad(file_name, "__metadata__." + k + " is not a string");
        out.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    GRPO_TRY(SafetensorsEntry e, read_entry(name, v, data_size, file_name));
    out.tensors.push_back(std::move(e));
  }
  // No two byte ranges overlap (empty tensors occupy nothing).
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : out.tensors) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      return bad(file_name, "tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                                "' overlap in the data section");
    }
  }
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace grpo::core
