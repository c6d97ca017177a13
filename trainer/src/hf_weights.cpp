#include "hf_weights.h"

#include <cstring>
#include <set>

#include <spdlog/spdlog.h>

#include "grpo/hf/hf_export.h"
#include "grpo/io/profile_store.h"
#include "grpo/trainer/hf_checkpoint.h"
#include "grpo/trainer/system_info.h"
#include "grpo/trainer/tensor_io.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::optional<fs::path> hf_model_dir(const std::string& model_path) {
  if (auto config = io::hf_config_path(model_path)) return config->parent_path();
  return std::nullopt;
}

core::Result<std::map<std::string, at::Tensor>> read_hf_parts(
    const fs::path& dir, const std::vector<Placement>& expected, const HfParts& parts,
    const core::ModelSpec& spec, HfReadStats* stats) {
  GRPO_TRY(HfCheckpoint ck, HfCheckpoint::open(dir));
  std::map<std::string, std::string> file_name;  // ours -> the checkpoint's
  std::set<std::string> want;                    // the checkpoint's
  for (const Placement& f : expected) {
    want.insert(file_name[f.name] = core::hf_tensor_name(spec, f.name));
  }
  HfReadStats counted;
  for (const auto& [name, t] : ck.tensors()) {
    if (want.count(name) == 0 && !(spec.tied_embeddings && name == "lm_head.weight")) {
      return make_error(ErrorKind::kInvalidValue,
                        "unexpected tensor " + name +
                            " (not a parameter of the model config.json "
                            "describes)",
                        {t.file, 0, 0});
    }
    counted.bytes_total += t.entry.end - t.entry.begin;
  }
  // Every tensor is checked, also those this rank does not read: all ranks fail alike.
  for (const Placement& f : expected) {
    const std::string& name = file_name.at(f.name);
    const auto it = ck.tensors().find(name);
    if (it == ck.tensors().end()) {
      return make_error(ErrorKind::kInvalidValue, "checkpoint lacks tensor " + name + " " +
                                                      shape_text(f.shape) + " in " + dir.string());
    }
    if (it->second.entry.shape != f.shape) {
      return make_error(ErrorKind::kInvalidValue,
                        "tensor " + name + " has shape " + shape_text(it->second.entry.shape) +
                            " but config.json makes it " + shape_text(f.shape),
                        {it->second.file, 0, 0});
    }
  }
  torch::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, slice] : parts) {
    const auto known = file_name.find(name);
    const auto it =
        known == file_name.end() ? ck.tensors().end() : ck.tensors().find(known->second);
    if (it == ck.tensors().end()) {
      return make_error(ErrorKind::kInternal, "asked to read " + name + ", not a model tensor");
    }
    const HfTensor& t = it->second;
    const std::vector<std::int64_t>& shape = t.entry.shape;
    // The tensor as [outer, along, inner] around the sliced dimension: each of the `outer`
    // blocks holds `length * inner` consecutive elements of the slice.
    const std::size_t dim = slice ? static_cast<std::size_t>(slice->dim) : 0;
    if (slice && (dim >= shape.size() || slice->offset < 0 || slice->length < 0 ||
                  slice->offset + slice->length > shape[dim])) {
      return make_error(ErrorKind::kInvalidValue,
                        "slice " + std::to_string(slice->offset) + "+" +
                            std::to_string(slice->length) + " of dimension " + std::to_string(dim) +
                            " is outside " + name + " " + shape_text(shape));
    }
    std::int64_t outer = 1;
    std::int64_t inner = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (slice && d < dim) outer *= shape[d];
      if (slice && d > dim) inner *= shape[d];
    }
    std::vector<std::int64_t> local_shape = shape;
    std::int64_t along = 1, offset = 0, length = 1;  // the whole tensor: one block
    if (slice) {
      along = shape[dim];
      offset = slice->offset;
      length = slice->length;
      local_shape[dim] = length;
    } else {
      inner = t.entry.numel();
    }
    const auto esize = static_cast<std::int64_t>(core::dtype_size(t.entry.dtype));
    // Copied out of the map (its bytes may be unaligned for the dtype), then converted.
    at::Tensor raw = at::empty(local_shape, at::TensorOptions().dtype(scalar_type(t.entry.dtype)));
    auto* to = static_cast<char*>(raw.data_ptr());
    const std::int64_t block = length * inner * esize;
    for (std::int64_t o = 0; o < outer; ++o) {
      std::memcpy(to + o * block, t.data + ((o * along + offset) * inner) * esize,
                  static_cast<std::size_t>(block));
    }
    counted.bytes_read += static_cast<std::uint64_t>(outer * block);
    out.emplace(name, raw.scalar_type() == at::kFloat ? raw : raw.to(at::kFloat));
  }
  if (stats != nullptr) *stats = counted;
  return out;
}

core::Result<std::map<std::string, at::Tensor>> read_hf_weights(
    const fs::path& dir, const std::vector<Placement>& expected, const core::ModelSpec& spec) {
  HfParts all;
  for (const Placement& f : expected) all[f.name] = std::nullopt;
  return read_hf_parts(dir, expected, all, spec);
}

core::Status load_hf_weights(RunContext& ctx, const fs::path& dir,
                             const std::vector<Placement>& full, const NamedTensors& local) {
  const std::map<std::string, at::Tensor> mine(local.begin(), local.end());
  HfParts parts;
  for (const Placement& f : full) {
    if (mine.count(f.name) == 0) continue;  // another rank's expert
    parts[f.name] = f.own;
  }
  HfReadStats stats;
  auto read = read_hf_parts(dir, full, parts, ctx.spec, &stats);
  core::Status st = core::ok_status();
  if (parts.size() != mine.size()) {
    st = make_error(ErrorKind::kInternal, "rank " + std::to_string(ctx.rank) +
                                              " holds tensors the full model does not name");
  }
  torch::NoGradGuard no_grad;
  if (st.ok() && read.ok()) {
    for (const auto& [name, t] : read.value()) {
      at::Tensor dst = mine.at(name);
      if (dst.sizes() != t.sizes()) {
        st = make_error(ErrorKind::kInternal, "rank " + std::to_string(ctx.rank) + " holds " +
                                                  name + " as " + shape_text(dst.sizes().vec()) +
                                                  ", read " + shape_text(t.sizes().vec()));
        break;
      }
      dst.copy_(t);
    }
  } else if (st.ok()) {
    st = read.error();
  }
  // One verdict for all: a rank that could not read fails the others too.
  at::Tensor failed = at::tensor({st.ok() ? std::int64_t{0} : std::int64_t{1}}, at::kLong);
  GRPO_TRY_STATUS(ctx.comm->allreduce_max(failed));
  if (!st.ok()) return st;
  if (failed.item<std::int64_t>() != 0) {
    return make_error(ErrorKind::kInvalidValue,
                      "another rank could not read the Hugging Face checkpoint " + dir.string());
  }
  spdlog::info(
      "rank {}: loaded {} of {} tensors from the Hugging Face checkpoint {}: read {} of {} "
      "bytes, peak RSS {:.1f} MiB",
      ctx.rank, parts.size(), full.size(), dir.string(), stats.bytes_read, stats.bytes_total,
      static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0));
  return core::ok_status();
}

}  // namespace grpo::trainer
