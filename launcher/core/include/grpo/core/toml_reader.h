// Reading TOML documents into typed structs with precise, one-line errors (file:line:col).
// Internal to the core's loaders (catalog.cpp) and the trainer's config; not for adapters.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <toml.hpp>
#include <vector>

#include "grpo/core/result.h"

namespace grpo::core {

using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;

// Parses a TOML document. Errors: kParse with the location of the syntax error. Inputs over
// 1 MiB or nested more than 64 levels deep are refused (kParse) before the parser sees them.
Result<TomlValue> parse_toml(std::string_view text, std::string_view file_name);

// Where a value came from.
SourceLocation location_of(const TomlValue& value);

// Reads the keys of one table, remembering which it consumed so that finish() can report the
// first unknown key (with a did-you-mean among the known ones). `path` is the dotted prefix used
// in messages ("device.").
class TableReader {
 public:
  TableReader(const TomlValue& table, std::string path);

  bool has(std::string_view key) const;
  const TomlValue* raw(std::string_view key);  // marks consumed; nullptr when absent

  // Each reads `key` into `out` when present (leaving `out` untouched when absent) and fails
  // with kWrongType / kInvalidValue otherwise; `required` turns absence into kMissingKey.
  Status read(std::string_view key, std::string& out, bool required = false);
  Status read(std::string_view key, bool& out, bool required = false);
  Status read(std::string_view key, double& out, bool required = false);
  Status read(std::string_view key, std::vector<std::string>& out, bool required = false);
  Status read(std::string_view key, std::map<std::string, std::string>& out);
  // Integers with an inclusive range check.
  Status read_int(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max,
                  bool required = false);
  Status read_int(std::string_view key, int& out, int min, int max, bool required = false);
  // A number that must be > 0 (or >= 0 when allow_zero).
  Status read_positive(std::string_view key, double& out, bool allow_zero, bool required = false);
  // A string that must be one of `choices`.
  Status read_enum(std::string_view key, std::string& out, const std::vector<std::string>& choices,
                   bool required = false);
  // A sub-table; nullptr when absent. Fails when present but not a table.
  Result<const TomlValue*> table(std::string_view key);

  // Marks keys as known without reading them (e.g. `extends`).
  void ignore(std::string_view key);
  // kUnknownKey for the first key that was never read.
  Status finish() const;

  const std::string& path() const { return path_; }
  SourceLocation where(std::string_view key) const;
  SourceLocation where() const;

 private:
  Error wrong_type(std::string_view key, std::string_view expected) const;
  const TomlValue& table_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
};

}  // namespace grpo::core
