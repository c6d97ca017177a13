// Hugging Face weights into the model (internal to grpo_trainer; docs/hf-checkpoints.md). Rank 0
// reads the checkpoint's tensors in full and hands them to scatter_full (full_model.h), so
// whatever layout shards the model (expert parallelism today) takes its part there, in one place.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "full_model.h"
#include "grpo/core/result.h"

namespace grpo::trainer {

// The directory of a model given as a Hugging Face directory (or its config.json), nullopt for a
// model spec from profiles/models.
std::optional<std::filesystem::path> hf_model_dir(const std::string& model_path);

// The checkpoint's tensors as fp32 (bf16/fp16 converted), exactly the names and shapes of
// `expected`; with `tied` embeddings an lm_head.weight in the file is ignored. Errors
// (kInvalidValue, one line naming the tensor): missing, unexpected, or of another shape; and
// HfCheckpoint::open's.
core::Result<std::map<std::string, at::Tensor>> read_hf_weights(
    const std::filesystem::path& dir, const std::vector<FullTensor>& expected, bool tied);

// Collective over the world: rank 0 reads `dir`, every rank copies the tensors its layout holds
// into `local` (converted to their dtype). A problem on rank 0 fails every rank; rank 0 returns
// its own error, the others scatter_full's.
core::Status load_hf_weights(RunContext& ctx, const std::filesystem::path& dir,
                             const std::vector<FullTensor>& full, const NamedTensors& local);

}  // namespace grpo::trainer
