#include "hf_weights.h"

#include <cstring>
#include <set>

#include <spdlog/spdlog.h>

#include "grpo/io/profile_store.h"
#include "grpo/trainer/hf_checkpoint.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;

namespace {

at::ScalarType torch_dtype(core::TensorDtype d) {
  switch (d) {
    case core::TensorDtype::kF16:
      return at::kHalf;
    case core::TensorDtype::kBF16:
      return at::kBFloat16;
    default:
      return at::kFloat;
  }
}

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

core::Result<std::map<std::string, at::Tensor>> read_hf_weights(
    const fs::path& dir, const std::vector<FullTensor>& expected, bool tied) {
  GRPO_TRY(HfCheckpoint ck, HfCheckpoint::open(dir));
  std::set<std::string> want;
  for (const FullTensor& f : expected) want.insert(f.name);
  for (const auto& [name, t] : ck.tensors()) {
    if (want.count(name) == 0 && !(tied && name == "lm_head.weight")) {
      return make_error(ErrorKind::kInvalidValue,
                        "unexpected tensor " + name +
                            " (not a parameter of the model config.json "
                            "describes)",
                        {t.file, 0, 0});
    }
  }
  torch::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> out;
  for (const FullTensor& f : expected) {
    const auto it = ck.tensors().find(f.name);
    if (it == ck.tensors().end()) {
      return make_error(ErrorKind::kInvalidValue, "checkpoint lacks tensor " + f.name + " " +
                                                      shape_text(f.shape) + " in " + dir.string());
    }
    const HfTensor& t = it->second;
    if (t.entry.shape != f.shape) {
      return make_error(ErrorKind::kInvalidValue,
                        "tensor " + f.name + " has shape " + shape_text(t.entry.shape) +
                            " but config.json makes it " + shape_text(f.shape),
                        {t.file, 0, 0});
    }
    // Copied out of the map (its bytes may be unaligned for the dtype), then converted.
    at::Tensor raw = at::empty(f.shape, at::TensorOptions().dtype(torch_dtype(t.entry.dtype)));
    std::memcpy(raw.data_ptr(), t.data, t.entry.end - t.entry.begin);
    out.emplace(f.name, raw.scalar_type() == at::kFloat ? raw : raw.to(at::kFloat));
  }
  return out;
}

core::Status load_hf_weights(RunContext& ctx, const fs::path& dir,
                             const std::vector<FullTensor>& full, const NamedTensors& local) {
  std::map<std::string, at::Tensor> src;
  core::Status mine = core::ok_status();
  if (ctx.rank == 0) {
    auto read = read_hf_weights(dir, full, ctx.spec.tied_embeddings);
    if (read.ok()) {
      src = std::move(read).value();
      spdlog::info("loaded {} tensors from the Hugging Face checkpoint {}", src.size(),
                   dir.string());
    } else {
      mine = read.error();
    }
  }
  // With nothing to send rank 0 makes scatter_full fail on every rank alike.
  core::Status st = scatter_full(ctx, full, src, local, [](const FullTensor&) { return 0; });
  if (!mine.ok()) return mine;
  return st;
}

}  // namespace grpo::trainer
