// A run's checkpoint as a Hugging Face model directory (`grpo-launch export`, the supervisor's
// --export-hf; docs/hf-checkpoints.md "Export"). The checkpoint is verified against its manifest
// (io::verify_checkpoint, as the trainer verifies it), its model.safetensors checked against the
// model the run trained (core::hf_parameters), and DIR written as a temporary sibling directory
// renamed into place at the end: DIR is complete or absent.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "grpo/app/export_run.h"

#include "grpo/app/catalog.h"
#include "grpo/core/catalog.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/text.h"
#include "grpo/core/toml_reader.h"
#include "grpo/hf/hf_export.h"
#include "grpo/hf/safetensors_header.h"
#include "grpo/io/checkpoint_files.h"
#include "grpo/io/files.h"
#include "grpo/io/profile_store.h"

namespace grpo::app {
namespace {

namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

// What a model directory may hold besides config.json and the weights: copied as they are.
constexpr const char* kTokenizerFiles[] = {
    "tokenizer.json",      "tokenizer_config.json",   "vocab.json",
    "merges.txt",          "special_tokens_map.json", "added_tokens.json",
    "chat_template.jinja", "chat_template.json"};

struct Source {
  io::VerifiedCheckpoint checkpoint;
  std::vector<std::string> skipped;  // newer checkpoints that did not verify: "dir: reason"
};

core::Result<Source> find_checkpoint(const fs::path& run_dir, std::optional<std::int64_t> step) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    return make_error(ErrorKind::kNotFound, "run directory not found: " + run_dir.string());
  }
  const fs::path root = run_dir / core::run_dir::kCheckpoints;
  if (step) {
    const fs::path dir = root / io::checkpoint_dir_name(*step);
    if (!fs::is_directory(dir, ec)) {
      return make_error(ErrorKind::kNotFound,
                        "no checkpoint of step " + std::to_string(*step) + " in " + root.string());
    }
    auto v = io::verify_checkpoint(dir, io::KeepMapped::kYes);
    if (!v.ok()) {
      return make_error(v.error().kind, dir.string() + ": does not verify: " + v.error().message);
    }
    return Source{std::move(v).value(), {}};
  }
  Source out;
  const auto candidates = io::checkpoint_candidates(root);
  if (candidates.empty()) {
    return make_error(ErrorKind::kNotFound, "no checkpoint in " + root.string());
  }
  std::optional<io::VerifiedCheckpoint> best;
  std::vector<std::pair<std::int64_t, std::string>> failed;
  for (const fs::path& dir : candidates) {
    const std::int64_t s = io::checkpoint_step(dir.filename().string()).value_or(0);
    if (best && s <= best->step) continue;
    auto v = io::verify_checkpoint(dir, io::KeepMapped::kYes);
    if (v.ok()) {
      best = std::move(v).value();
    } else {
      failed.emplace_back(s, dir.string() + ": " + v.error().message);
    }
  }
  if (!best) {
    return make_error(
        ErrorKind::kInvalidValue,
        "no checkpoint in " + root.string() + " verifies (newest: " + failed.front().second + ")");
  }
  for (auto& [s, why] : failed) {
    if (s > best->step) out.skipped.push_back(std::move(why));
  }
  out.checkpoint = std::move(*best);
  return out;
}

// The model the run trained: actor_rollout_ref.model.path of the checkpoint's config.toml (what
// the trainer loaded), else the manifest's metadata.model.
core::Result<std::string> model_of(const io::VerifiedCheckpoint& ckpt) {
  const fs::path file = ckpt.dir / core::run_dir::kCheckpointConfig;
  if (ckpt.manifest["files"].contains(core::run_dir::kCheckpointConfig)) {
    GRPO_TRY(std::string text, io::read_file(file));
    GRPO_TRY(core::TomlValue doc, core::parse_toml(text, file.string()));
    const core::TomlValue* v = &doc;
    for (const char* part : {"actor_rollout_ref", "model", "path"}) {
      if (!v->is_table() || v->as_table().count(part) == 0) {
        v = nullptr;
        break;
      }
      v = &v->as_table().at(part);
    }
    if (v != nullptr && v->is_string() && !v->as_string().str.empty()) return v->as_string().str;
  }
  const auto& meta = ckpt.manifest.value("metadata", nlohmann::json::object());
  if (meta.is_object() && meta.contains("model") && meta["model"].is_string()) {
    return meta["model"].get<std::string>();
  }
  return make_error(ErrorKind::kNotFound, ckpt.dir.string() +
                                              ": the checkpoint does not say which model it holds "
                                              "(no actor_rollout_ref.model.path in config.toml)");
}

// The checkpoint's tensors checked against the model: every parameter present with its shape,
// fp32, nothing else (a tied lm_head.weight is left out, as save_pretrained leaves it out).
core::Status check_tensors(const core::SafetensorsHeader& header,
                           const std::vector<core::HfParameter>& params, const std::string& file,
                           bool tied) {
  std::map<std::string, const core::SafetensorsEntry*> by_name;
  for (const auto& e : header.tensors) by_name[e.name] = &e;
  for (const auto& p : params) {
    const auto it = by_name.find(p.name);
    if (it == by_name.end()) {
      return make_error(ErrorKind::kInvalidValue,
                        file + ": lacks tensor " + p.name + " of the run's model");
    }
    if (it->second->shape != p.shape) {
      const auto shape = [](const std::vector<std::int64_t>& s) {
        std::string out = "[";
        for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      return make_error(ErrorKind::kInvalidValue,
                        file + ": tensor " + p.name + " has shape " + shape(it->second->shape) +
                            " but the run's model makes it " + shape(p.shape));
    }
    if (it->second->dtype != core::TensorDtype::kF32) {
      return make_error(ErrorKind::kInvalidValue,
                        file + ": tensor " + p.name + " is " +
                            std::string(core::to_string(it->second->dtype)) +
                            "; grpo-trainer checkpoints hold F32");
    }
    by_name.erase(it);
  }
  for (const auto& [name, e] : by_name) {
    if (tied && name == "lm_head.weight") continue;
    return make_error(ErrorKind::kInvalidValue, file + ": unexpected tensor " + name +
                                                    " (not a parameter of the run's model)");
  }
  return core::ok_status();
}

// One shard file: header, then each tensor converted from fp32 to `dtype`.
std::string shard_bytes(std::string_view model, const core::SafetensorsHeader& header,
                        const std::map<std::string, const core::SafetensorsEntry*>& by_name,
                        const std::vector<std::string>& names, core::TensorDtype dtype) {
  std::vector<std::string> sorted = names;  // safetensors orders a file's tensors by name
  std::sort(sorted.begin(), sorted.end());
  std::vector<core::SafetensorsEntry> entries;
  std::uint64_t offset = 0;
  for (const auto& n : sorted) {
    core::SafetensorsEntry e = *by_name.at(n);
    e.name = n;
    const std::uint64_t bytes = static_cast<std::uint64_t>(e.numel()) * core::dtype_size(dtype);
    e.dtype = dtype;
    e.begin = offset;
    e.end = offset + bytes;
    offset = e.end;
    entries.push_back(std::move(e));
  }
  std::string out = core::safetensors_header_bytes(entries);
  const std::size_t data_start = out.size();
  out.resize(data_start + offset);
  const char* src_base = model.data() + header.data_start;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const core::SafetensorsEntry& src = *by_name.at(sorted[i]);
    const char* from = src_base + src.begin;
    char* to = out.data() + data_start + entries[i].begin;
    const auto n = static_cast<std::size_t>(src.numel());
    if (dtype == core::TensorDtype::kF32) {
      std::memcpy(to, from, n * 4);
      continue;
    }
    for (std::size_t k = 0; k < n; ++k) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, from + 4 * k, 4);  // little-endian hosts, as the trainer's files
      const std::uint16_t h =
          dtype == core::TensorDtype::kBF16 ? core::fp32_to_bf16(bits) : core::fp32_to_fp16(bits);
      std::memcpy(to + 2 * k, &h, 2);
    }
  }
  return out;
}

// Removes the temporary directory unless it was renamed into place.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    if (keep || path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

core::Result<ExportDone> export_checkpoint(const ExportRequest& args, const WarningSink& warn) {
  GRPO_TRY(const core::TensorDtype dtype, core::parse_export_dtype(args.dtype));
  GRPO_TRY(const std::uint64_t max_shard, core::parse_shard_size(args.max_shard_size));
  const fs::path out_dir = args.output.lexically_normal();
  if (args.output.empty() || out_dir.filename().empty()) {
    return make_error(ErrorKind::kInvalidValue, "-o: expected a directory name");
  }
  std::error_code ec;
  if (fs::exists(out_dir, ec) && (!fs::is_directory(out_dir, ec) || !fs::is_empty(out_dir, ec))) {
    return make_error(ErrorKind::kIo, "output directory exists and is not empty: " +
                                          out_dir.string() + " (nothing was written)");
  }

  GRPO_TRY(Source src, find_checkpoint(args.run_dir, args.step));
  for (const auto& why : src.skipped)
    if (warn) warn("skipped a checkpoint that does not verify: " + why);
  const io::VerifiedCheckpoint& ckpt = src.checkpoint;
  if (!ckpt.manifest["files"].contains("model.safetensors")) {
    return make_error(ErrorKind::kNotFound,
                      ckpt.dir.string() + ": the manifest lists no model.safetensors");
  }
  GRPO_TRY(const std::string model, model_of(ckpt));
  const io::DirectorySourceProvider provider = catalog(args.profile_dirs);
  auto spec = core::load_model(provider, model);
  if (!spec.ok()) {
    return make_error(spec.error().kind, "the run's model '" + model + "' (from " +
                                             ckpt.dir.string() +
                                             "/config.toml): " + spec.error().str());
  }
  const std::optional<fs::path> hf_config = io::hf_config_path(model);

  // The bytes the checkpoint's SHA-256 was checked over (the mapping verify_checkpoint kept),
  // never a second read of the file: what is exported is what was verified.
  const fs::path model_file = ckpt.dir / "model.safetensors";
  const std::string_view model_bytes = ckpt.bytes("model.safetensors");
  if (model_bytes.empty()) {
    return make_error(ErrorKind::kInvalidValue,
                      ckpt.dir.string() + ": the manifest lists no model.safetensors");
  }
  GRPO_TRY(const core::SafetensorsHeader header,
           core::parse_safetensors_header(model_bytes, model_file.string()));
  const std::vector<core::HfParameter> params = core::hf_parameters(*spec);
  GRPO_TRY_STATUS(check_tensors(header, params, model_file.string(), spec->tied_embeddings));
  const core::HfArchitecture arch = core::hf_architecture(*spec);
  if (!arch.caveat.empty() && warn) warn(spec->name + ": " + arch.caveat);

  // The files of DIR, small ones first.
  std::map<std::string, std::string> small;
  if (hf_config) {
    GRPO_TRY(const std::string text, io::read_file(*hf_config));
    GRPO_TRY(small["config.json"], core::hf_config_with_dtype(text, hf_config->string(), dtype));
    const fs::path model_dir = hf_config->parent_path();
    for (const char* name : kTokenizerFiles) {
      if (!fs::is_regular_file(model_dir / name, ec)) continue;
      GRPO_TRY(small[name], io::read_file(model_dir / name, std::size_t{1} << 30));
    }
    if (fs::is_regular_file(model_dir / "generation_config.json", ec)) {
      GRPO_TRY(small["generation_config.json"],
               io::read_file(model_dir / "generation_config.json"));
    }
  } else {
    small["config.json"] = core::hf_config_from_spec(*spec, dtype);
  }
  if (small.count("generation_config.json") == 0) {
    small["generation_config.json"] = core::hf_generation_config();
  }

  // Shards and index name each tensor as the family's checkpoints do (p.published); by_name finds
  // the checkpoint's entry (p.name) under that name.
  std::vector<core::ShardTensor> tensors;
  std::map<std::string, const core::SafetensorsEntry*> ours, by_name;
  for (const auto& e : header.tensors) ours[e.name] = &e;
  for (const auto& p : params) {
    by_name[p.published] = ours.at(p.name);
    tensors.push_back({p.published, static_cast<std::uint64_t>(by_name.at(p.published)->numel()) *
                                        core::dtype_size(dtype)});
  }
  const core::ShardPlan plan = core::plan_shards(tensors, max_shard);
  if (plan.indexed()) small["model.safetensors.index.json"] = core::shard_index_json(plan, tensors);

  // Written into a temporary sibling, renamed into place at the end.
  const fs::path parent = out_dir.has_parent_path() ? out_dir.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  TempDir tmp{parent /
              (".tmp-export-" + out_dir.filename().string() + "-" + std::to_string(::getpid()))};
  fs::remove_all(tmp.path, ec);
  if (!fs::create_directory(tmp.path, ec)) {
    return make_error(ErrorKind::kIo, "cannot create " + tmp.path.string() + ": " +
                                          (ec ? ec.message() : std::string("exists")));
  }
  for (const auto& [name, content] : small) {
    GRPO_TRY_STATUS(io::write_file_atomic(tmp.path / name, content));
  }
  for (std::size_t f = 0; f < plan.files.size(); ++f) {
    std::vector<std::string> names;
    for (std::size_t i : plan.members[f]) names.push_back(tensors[i].name);
    const std::string bytes = shard_bytes(model_bytes, header, by_name, names, dtype);
    GRPO_TRY_STATUS(io::write_file_atomic(tmp.path / plan.files[f], bytes));
  }
  if (fs::is_directory(out_dir, ec)) fs::remove(out_dir, ec);  // empty (checked above)
  GRPO_TRY_STATUS(io::rename_no_replace(tmp.path, out_dir));
  tmp.keep = true;
  std::ostringstream line;
  line << "exported step " << ckpt.step << " of " << args.run_dir.string() << " (" << spec->name
       << ", " << arch.architecture << ", " << core::torch_dtype_name(dtype) << ") to "
       << out_dir.string() << ": " << params.size() << " tensors, "
       << core::format_count(static_cast<double>(plan.total_size)) << "B in " << plan.files.size()
       << (plan.files.size() == 1 ? " file" : " shards") << "\n";
  return ExportDone{ckpt.step, line.str()};
}

core::Result<std::int64_t> HfRunExporter::export_newest(const std::filesystem::path& run_dir,
                                                        const std::filesystem::path& out) {
  ExportRequest request;
  request.run_dir = run_dir;
  request.output = out;
  request.profile_dirs = profile_dirs_;
  GRPO_TRY(const ExportDone done, export_checkpoint(request, warn_));
  return done.step;
}

}  // namespace grpo::app
