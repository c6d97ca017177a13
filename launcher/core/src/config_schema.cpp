#include "grpo/core/config_schema.h"

#include <sstream>

#include "grpo/core/text.h"

namespace grpo::core {
namespace {

// Non-comment, non-empty lines split at tabs.
std::vector<std::vector<std::string>> rows(std::string_view text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::size_t start = 0;
    while (true) {
      const auto tab = line.find('\t', start);
      cols.push_back(
          line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    out.push_back(std::move(cols));
  }
  return out;
}

EnvStatus env_status(const std::vector<std::string>& cols) {
  if (cols.size() < 2 || cols[1].empty()) return EnvStatus::kDocumented;
  if (cols[1] == "deprecated") return EnvStatus::kDeprecated;
  if (cols[1] == "undocumented") return EnvStatus::kUndocumented;
  return EnvStatus::kDocumented;  // "pytorch", "cann-doc", "torch_npu": documented elsewhere
}

std::string parent_of(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string{} : std::string(key.substr(0, dot));
}

constexpr std::string_view kTransformerConfig = "override_transformer_config";

}  // namespace

Result<ConfigSchema> ConfigSchema::parse(const SchemaTexts& t) {
  ConfigSchema s;
  for (const auto& cols : rows(t.verl_keys)) {
    const std::string& k = cols[0];
    if (k.size() > 2 && k.compare(k.size() - 2, 2, ".*") == 0) {
      s.wildcard_prefixes_.push_back(k.substr(0, k.size() - 2));
    } else {
      s.keys_.insert(k);
    }
  }
  for (const auto& cols : rows(t.megatron_fields))
    s.megatron_[cols[0]] = cols.size() > 1 ? cols[1] : "";
  for (const auto& cols : rows(t.nccl_env)) s.nccl_[cols[0]] = env_status(cols);
  for (const auto& cols : rows(t.hccl_env)) s.hccl_[cols[0]] = env_status(cols);
  if (s.keys_.empty()) return make_error(ErrorKind::kParse, "verl key list is empty");
  if (s.megatron_.empty())
    return make_error(ErrorKind::kParse, "Megatron-Core field list is empty");
  if (s.nccl_.empty()) return make_error(ErrorKind::kParse, "NCCL variable list is empty");
  return s;
}

KeyCheck ConfigSchema::check_key(std::string_view key) const {
  KeyCheck r;
  if (key.rfind("hydra.", 0) == 0 || key == "hydra") {
    r.known = true;
    return r;
  }
  // Children of a mapping that takes arbitrary keys; override_transformer_config's children
  // must be TransformerConfig fields (the first component; deeper ones are values of dicts).
  for (const auto& w : wildcard_prefixes_) {
    if (key.size() > w.size() + 1 && key.compare(0, w.size(), w) == 0 && key[w.size()] == '.') {
      const std::string_view child = key.substr(w.size() + 1);
      const bool transformer = w.size() >= kTransformerConfig.size() &&
                               w.compare(w.size() - kTransformerConfig.size(),
                                         kTransformerConfig.size(), kTransformerConfig) == 0;
      if (!transformer) {
        r.known = true;
        return r;
      }
      const std::string field(child.substr(0, child.find('.')));
      if (megatron_.count(field) > 0) {
        r.known = true;
        return r;
      }
      std::vector<std::string> fields;
      for (const auto& [f, type] : megatron_) fields.push_back(f);
      const auto best = closest_match(field, fields);
      if (best) r.suggestion = w + "." + *best;
      r.detail = "'" + field + "' is not a field of Megatron-Core's TransformerConfig";
      return r;
    }
  }
  if (keys_.count(key) > 0) {
    r.known = true;
    return r;
  }
  // Suggest among the siblings first, then among every key.
  const std::string parent = parent_of(key);
  std::vector<std::string> siblings;
  for (const auto& k : keys_) {
    if (parent_of(k) == parent) siblings.push_back(k);
  }
  auto best = closest_match(key, siblings);
  if (!best) {
    const std::vector<std::string> all(keys_.begin(), keys_.end());
    best = closest_match(key, all);
  }
  if (best) r.suggestion = *best;
  r.detail = keys_.count(parent) > 0 || parent.empty()
                 ? "not a key of verl's configuration"
                 : "'" + parent + "' is not a section of verl's configuration";
  return r;
}

EnvCheck ConfigSchema::check_env(std::string_view name) const {
  EnvCheck r;
  const std::map<std::string, EnvStatus, std::less<>>* table = nullptr;
  if (name.rfind("NCCL_", 0) == 0) {
    table = &nccl_;
    r.library = "NCCL";
  } else if (name.rfind("HCCL_", 0) == 0) {
    table = &hccl_;
    r.library = "HCCL";
  } else {
    r.status = EnvStatus::kDocumented;
    return r;
  }
  const auto it = table->find(name);
  if (it != table->end()) {
    r.status = it->second;
    return r;
  }
  r.status = EnvStatus::kUnknown;
  std::vector<std::string> names;
  for (const auto& [n, st] : *table) {
    if (st != EnvStatus::kUndocumented) names.push_back(n);
  }
  if (auto best = closest_match(name, names)) r.suggestion = *best;
  return r;
}

}  // namespace grpo::core
