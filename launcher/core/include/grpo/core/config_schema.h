// The configuration schema the checker validates against, parsed from the key lists extracted
// from the real projects (data/schema/, docs/schema-data.md): verl's Hydra config keys,
// Megatron-Core TransformerConfig fields, and the NCCL / HCCL environment variables they document.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

struct SchemaTexts {
  std::string verl_keys;        // data/schema/verl_keys.txt
  std::string megatron_fields;  // data/schema/megatron_transformer_config.txt
  std::string nccl_env;         // data/schema/nccl_env.txt
  std::string hccl_env;         // data/schema/hccl_env.txt
};

enum class EnvStatus { kDocumented, kDeprecated, kUndocumented, kUnknown };

struct KeyCheck {
  bool known = false;
  std::string suggestion;  // the closest known key, when there is a likely one
  std::string detail;      // e.g. "not a field of Megatron-Core's TransformerConfig"
};

struct EnvCheck {
  EnvStatus status = EnvStatus::kUnknown;
  std::string suggestion;
  std::string library;  // "NCCL" or "HCCL"
};

class ConfigSchema {
 public:
  // Errors: kParse when a file has no entries (a wrong or empty file).
  static Result<ConfigSchema> parse(const SchemaTexts& texts);

  // `key` without its Hydra prefix (+, ++, ~).
  KeyCheck check_key(std::string_view key) const;
  // For NCCL_* and HCCL_* variables; anything else is kDocumented (not ours to judge).
  EnvCheck check_env(std::string_view name) const;
  std::size_t verl_key_count() const { return keys_.size(); }
  std::size_t megatron_field_count() const { return megatron_.size(); }

 private:
  std::set<std::string, std::less<>> keys_;
  std::vector<std::string> wildcard_prefixes_;                // "a.b" for lines "a.b.*"
  std::map<std::string, std::string, std::less<>> megatron_;  // field -> type
  std::map<std::string, EnvStatus, std::less<>> nccl_;
  std::map<std::string, EnvStatus, std::less<>> hccl_;
};

}  // namespace grpo::core
