// Hugging Face weights into the model (internal to grpo_trainer; docs/hf-checkpoints.md). Every
// rank maps the checkpoint's files itself and copies out only what its layout holds: a TP
// slice's rows or columns, its own experts, the replicated tensors whole. Nothing travels between
// ranks but the verdict.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "full_model.h"
#include "grpo/core/result.h"
#include "grpo/trainer/sharding_plan.h"

namespace grpo::trainer {

// The directory of a model given as a Hugging Face directory (or its config.json), nullopt for a
// model spec from profiles/models.
std::optional<std::filesystem::path> hf_model_dir(const std::string& model_path);

// What to read of a tensor, by name: all of it (nullopt) or one TP slice (sharding_plan.h).
using HfParts = std::map<std::string, std::optional<TpSlice>>;

// What a read took from the mapped files: the bytes copied out, and the data bytes of the
// checkpoint's tensors in all.
struct HfReadStats {
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_total = 0;
};

// The tensors of `parts` as fp32 (bf16/fp16 converted), each the whole tensor or its slice, copied
// from the mapped files without touching the rest. The checkpoint is first checked against all of
// `expected` (names and shapes; with `spec`'s tied embeddings an lm_head.weight in the file is
// ignored). Names are grpo-trainer's; the files' are core::hf_tensor_name(spec, name).
// Errors (kInvalidValue, one line naming the tensor): missing, unexpected, or of another shape; a
// slice outside the tensor; and HfCheckpoint::open's.
core::Result<std::map<std::string, at::Tensor>> read_hf_parts(
    const std::filesystem::path& dir, const std::vector<Placement>& expected, const HfParts& parts,
    const core::ModelSpec& spec, HfReadStats* stats = nullptr);

// read_hf_parts of every tensor of `expected`, whole.
core::Result<std::map<std::string, at::Tensor>> read_hf_weights(
    const std::filesystem::path& dir, const std::vector<Placement>& expected,
    const core::ModelSpec& spec);

// Collective over the world: every rank reads from `dir` exactly the tensors (and TP slices) its
// `local` holds and copies them in (converted to their dtype). A problem on any rank fails every
// rank: the rank that met it returns its error, the others say another rank could not read.
core::Status load_hf_weights(RunContext& ctx, const std::filesystem::path& dir,
                             const std::vector<Placement>& full, const NamedTensors& local);

}  // namespace grpo::trainer
