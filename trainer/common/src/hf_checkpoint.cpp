#include "grpo/trainer/hf_checkpoint.h"

#include <set>

#include <nlohmann/json.hpp>

#include "grpo/io/files.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

// Maps `file` and checks its header; adds its tensors to `out` (a name in two files: an error).
core::Status add_file(const fs::path& file, std::vector<std::unique_ptr<io::MappedFile>>& files,
                      std::map<std::string, HfTensor>& out) {
  GRPO_TRY(io::MappedFile mapped, io::MappedFile::open(file));
  GRPO_TRY(core::SafetensorsHeader header,
           core::parse_safetensors_header(mapped.bytes(), file.string()));
  files.push_back(std::make_unique<io::MappedFile>(std::move(mapped)));
  const char* base = files.back()->bytes().data() + header.data_start;
  for (core::SafetensorsEntry& e : header.tensors) {
    if (!core::is_weight_dtype(e.dtype)) {
      return make_error(ErrorKind::kParse,
                        "safetensors: tensor '" + e.name + "': dtype '" +
                            std::string(core::to_string(e.dtype)) +
                            "' is not supported for weights (F32, F16, BF16)",
                        {file.string(), 0, 0});
    }
    const std::string name = e.name;
    const char* data = base + e.begin;
    auto [it, inserted] = out.emplace(name, HfTensor{std::move(e), data, file.string()});
    if (!inserted) {
      return make_error(ErrorKind::kInvalidValue,
                        "tensor " + name + " is in both " + it->second.file + " and this file",
                        {file.string(), 0, 0});
    }
  }
  return core::ok_status();
}

}  // namespace

core::Result<HfCheckpoint> HfCheckpoint::open(const fs::path& dir) {
  HfCheckpoint ck;
  std::error_code ec;
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(single, ec)) {
    GRPO_TRY_STATUS(add_file(single, ck.files_, ck.tensors_));
    return ck;
  }
  if (!fs::exists(index, ec)) {
    return make_error(ErrorKind::kNotFound,
                      "no model.safetensors or model.safetensors.index.json in " + dir.string() +
                          " (only safetensors checkpoints are read)");
  }
  GRPO_TRY(std::string text, io::read_file(index, 64u << 20));
  const std::string where = index.string();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    if (const auto colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
    return make_error(ErrorKind::kParse, "not valid JSON: " + why, {where, 0, 0});
  }
  const auto wm = doc.is_object() ? doc.find("weight_map") : doc.end();
  if (!doc.is_object() || wm == doc.end() || !wm->is_object()) {
    return make_error(ErrorKind::kParse, "expected an object with a weight_map object",
                      {where, 0, 0});
  }
  std::map<std::string, std::string> wanted;  // tensor -> shard
  std::set<std::string> shards;
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string()) {
      return make_error(ErrorKind::kParse, "weight_map." + name + " is not a file name",
                        {where, 0, 0});
    }
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
      return make_error(ErrorKind::kInvalidValue,
                        "weight_map." + name + ": '" + s + "' is not a file in this directory",
                        {where, 0, 0});
    }
    wanted[name] = s;
    shards.insert(s);
  }
  for (const std::string& s : shards) GRPO_TRY_STATUS(add_file(dir / s, ck.files_, ck.tensors_));
  for (const auto& [name, shard] : wanted) {
    const auto it = ck.tensors_.find(name);
    if (it == ck.tensors_.end() || fs::path(it->second.file).filename() != shard) {
      return make_error(ErrorKind::kInvalidValue,
                        "weight_map puts tensor " + name + " in " + shard + ", which lacks it",
                        {where, 0, 0});
    }
  }
  for (const auto& [name, t] : ck.tensors_) {
    if (wanted.count(name) == 0) {
      return make_error(ErrorKind::kInvalidValue,
                        "tensor " + name + " is not in weight_map of " + where, {t.file, 0, 0});
    }
  }
  return ck;
}

}  // namespace grpo::trainer
