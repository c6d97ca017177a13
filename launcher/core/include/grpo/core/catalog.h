// Loading cluster profiles and model specs from TOML text, with `extends` chains and
// `--set key=value` overrides. Pure: the text comes from a SourceProvider (the filesystem search
// path in launcher/io, an in-memory map in tests). Formats: docs/profile-format.md.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/cluster_profile.h"
#include "grpo/core/model_spec.h"
#include "grpo/core/result.h"

namespace grpo::core {

enum class CatalogKind { kCluster, kModel };
std::string_view to_string(CatalogKind kind);

// Whether `name` may name a profile or model on the search path: letters, digits, '.', '_' and
// '-', not starting with '.'. Other files there are neither listed nor found: their names reach
// shells (completion, scripts), where $(...) or a newline would be code (docs/security.md).
bool is_catalog_name(std::string_view name);

struct SourceFile {
  std::string path;  // shown in error messages
  std::string text;
  // A model that is a Hugging Face directory: `text` is its config.json (hf_config.h) and `path`
  // that file's path; `extends` does not apply.
  bool hf_config = false;
};

// Finds the text of a named profile or model. Returns kNotFound (with the places searched in the
// message) when there is none. A name that looks like a path (contains '/' or ends in .toml) is
// taken as a file name.
class SourceProvider {
 public:
  virtual ~SourceProvider() = default;
  virtual Result<SourceFile> find(CatalogKind kind, std::string_view name) const = 0;
  // Every name the provider can find, for --list and did-you-mean hints.
  virtual std::vector<std::string> names(CatalogKind kind) const = 0;
};

// An in-memory provider (tests, fuzzing): name -> text.
class MemorySourceProvider final : public SourceProvider {
 public:
  void add(CatalogKind kind, std::string name, std::string text);
  Result<SourceFile> find(CatalogKind kind, std::string_view name) const override;
  std::vector<std::string> names(CatalogKind kind) const override;

 private:
  std::map<std::string, std::string> clusters_;
  std::map<std::string, std::string> models_;
};

// One `--set key=value` from the command line. The value is read as a TOML value (integer, float,
// boolean, array, inline table, quoted string) and taken as a bare string when it is none of them.
struct Override {
  std::string key;    // dotted path: "device.memory_gib", "grpo.train_batch_size"
  std::string value;  // raw text after '='
};
// Parses "key=value" (errors: kInvalidValue for a missing '=' or an empty key).
Result<Override> parse_override(std::string_view text);

// Loads a cluster profile by name, following `extends` (cycles: kCycle) and applying overrides
// last. Overrides whose first key is a layout key (tp, pp, ...) are not profile fields: pass
// them to the planner instead (see split_layout_overrides in planner.h).
Result<ClusterProfile> load_cluster(const SourceProvider& provider, std::string_view name,
                                    const std::vector<Override>& overrides = {});

// Loads a model spec by name, following `extends`, or from the config.json of a Hugging Face
// model directory when the provider finds one (SourceFile::hf_config): the one place both
// grpo-launch and grpo-trainer turn --model into a spec.
Result<ModelSpec> load_model(const SourceProvider& provider, std::string_view name);

// Parses one model spec document with no `extends` (used by the fuzzer and the trainer).
Result<ModelSpec> parse_model_spec(std::string_view text, std::string_view file_name);
// Parses one cluster profile document with no `extends`.
Result<ClusterProfile> parse_cluster_profile(std::string_view text, std::string_view file_name);

}  // namespace grpo::core
