// Internal to hf_config*.cpp: the config.json reader shared by the per-family readers
// (hf_config.cpp: Qwen, Llama, Mistral, Mixtral and the dispatch; hf_config_families.cpp: the
// other families).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grpo/core/model_spec.h"
#include "grpo/core/result.h"

namespace grpo::core::hf_detail {

using nlohmann::json;

// The 1-based line and column of byte `offset` of `text`.
inline SourceLocation location_at(std::string_view text, std::string_view file,
                                  std::size_t offset) {
  SourceLocation loc{std::string(file), 1, 1};
  offset = std::min(offset, text.size());
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

// Reads config.json's keys with transformers' defaults; errors point at the key's first
// occurrence in the text (the file itself when the key is absent), for a nested object's reader
// its first occurrence after the object's own key.
class ConfigReader {
 public:
  ConfigReader(const json& doc, std::string_view text, std::string_view file, std::size_t from = 0)
      : doc_(doc), text_(text), file_(file), from_(from) {}

  SourceLocation where(std::string_view key) const {
    const std::string quoted = "\"" + std::string(key) + "\"";
    const std::size_t at = text_.find(quoted, from_);
    if (at == std::string_view::npos) return SourceLocation{std::string(file_), 0, 0};
    return location_at(text_, file_, at);
  }
  // Whether `key` holds an object (Qwen-VL's text_config and vision_config).
  bool has_object(std::string_view key) const {
    const json* v = get(key);
    return v != nullptr && v->is_object();
  }
  // A reader of the object at `key` (has_object(key) must hold).
  ConfigReader nested(std::string_view key) const {
    const std::size_t at = text_.find("\"" + std::string(key) + "\"", from_);
    return ConfigReader(*get(key), text_, file_, at == std::string_view::npos ? from_ : at);
  }
  Error fail(ErrorKind kind, std::string_view key, const std::string& why) const {
    return make_error(kind, std::string(key) + ": " + why, where(key));
  }
  // The value of `key`, or null when absent.
  const json* get(std::string_view key) const {
    const auto it = doc_.find(std::string(key));
    return it == doc_.end() ? nullptr : &*it;
  }
  bool is_null(std::string_view key) const {
    const json* v = get(key);
    return v == nullptr || v->is_null();
  }

  Status read_int(std::string_view key, std::int64_t& out, std::int64_t def, std::int64_t lo,
                  std::int64_t hi) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_number_integer()) return fail(ErrorKind::kWrongType, key, "expected an integer");
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      return fail(ErrorKind::kInvalidValue, key,
                  "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    const std::int64_t x = v->get<std::int64_t>();
    if (x < lo || x > hi) {
      return fail(ErrorKind::kInvalidValue, key,
                  std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
    }
    out = x;
    return ok_status();
  }
  // read_int, except that an explicit null gives `if_null` (keys whose null means "none":
  // DeepseekV3Config's q_lora_rank, DeepseekV2Config's n_shared_experts).
  Status read_int_or_null(std::string_view key, std::int64_t& out, std::int64_t def,
                          std::int64_t if_null, std::int64_t lo, std::int64_t hi) const {
    const json* v = get(key);
    if (v != nullptr && v->is_null()) {
      out = if_null;
      return ok_status();
    }
    return read_int(key, out, def, lo, hi);
  }
  // A string key, `def` when absent or null.
  Status read_string(std::string_view key, std::string& out, const std::string& def) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_string()) return fail(ErrorKind::kWrongType, key, "expected a string");
    out = v->get<std::string>();
    return ok_status();
  }
  Status read_positive_double(std::string_view key, double& out, double def) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_number()) return fail(ErrorKind::kWrongType, key, "expected a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x <= 0.0) {
      return fail(ErrorKind::kInvalidValue, key, "expected a positive number");
    }
    out = x;
    return ok_status();
  }
  Status read_bool(std::string_view key, bool& out, bool def) const {
    const json* v = get(key);
    if (v == nullptr || v->is_null()) {
      out = def;
      return ok_status();
    }
    if (!v->is_boolean()) return fail(ErrorKind::kWrongType, key, "expected true or false");
    out = v->get<bool>();
    return ok_status();
  }

 private:
  const json& doc_;
  std::string_view text_;
  std::string_view file_;
  std::size_t from_;
};

enum class Arch {
  kQwen2,
  kQwen3,
  kQwen3Moe,
  kLlama,
  kMistral,
  kMixtral,
  kQwen2Moe,
  kDeepseekV2,
  kDeepseekV3,
  kGlm4Moe,
  kGptOss,
  kGemma2,
  kGemma3,
  kPhi3,
  kOlmoe,
  kOlmo2,
  kQwen25Vl,
  kQwen3Vl,
  kQwen3VlMoe,
  kGemma3Vl,
  kDeepseekV32,
  kMimo,
};

// DeepSeek-V2, V3 and V3.2: MLA on every layer (read_deepseek).
inline bool is_deepseek(Arch a) {
  return a == Arch::kDeepseekV2 || a == Arch::kDeepseekV3 || a == Arch::kDeepseekV32;
}

// Upper bounds that keep every product of the counts far from overflow.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 30;
constexpr std::int64_t kMaxExperts = std::int64_t{1} << 16;

// hf_config_families.cpp: the keys each family adds to the common ones (hidden_size, layers,
// heads, head_dim, intermediate_size, vocabulary, rope, norms' eps) model_from_hf_config reads.
Status read_deepseek(const ConfigReader& r, Arch arch, ModelSpec& m);
Status read_glm4_moe(const ConfigReader& r, ModelSpec& m);
Status read_gpt_oss(const ConfigReader& r, ModelSpec& m);
Status read_gemma(const ConfigReader& r, Arch arch, ModelSpec& m);
Status read_olmo(const ConfigReader& r, Arch arch, ModelSpec& m);
// hf_config_vision.cpp: the vision towers, from vision_config's reader, into m.vision.
Status read_qwen25_vision(const ConfigReader& v, ModelSpec& m);
Status read_qwen3_vision(const ConfigReader& v, ModelSpec& m);
Status read_gemma3_vision(const ConfigReader& v, ModelSpec& m);  // after the text keys

}  // namespace grpo::core::hf_detail
