// Sampling responses from the policy: batched over every prompt of a rank and every response of
// its group, with temperature, top-k and top-p, decoding with the model's KV cache (or, for
// comparison, recomputing the whole prefix at every token).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "grpo/trainer/model.h"
#include "grpo/trainer/tasks.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

struct SamplingParams {
  double temperature = 1.0;
  double top_p = 1.0;
  std::int64_t top_k = -1;  // -1: off
  bool greedy = false;      // argmax; temperature/top-p/top-k ignored
  // The tokens that end a response (TaskData::eos_ids): the built-in tasks' <eos> by default.
  std::vector<std::int64_t> eos_ids = {Tokenizer::kEos};
};

// Prompts left-padded to a common length, so every row's last slot is its last prompt token.
struct PromptBatch {
  at::Tensor tokens;  // [B, P] int64
  at::Tensor valid;   // [B, P] bool
};
PromptBatch make_prompt_batch(const std::vector<std::vector<std::int64_t>>& prompts);

struct Generation {
  at::Tensor tokens;                  // [B, R] int64; <pad> after a row's <eos>
  at::Tensor valid;                   // [B, R] bool; true up to and including <eos>
  std::int64_t generated_tokens = 0;  // valid tokens, summed over rows
};

// Called after every decoding step with the number of steps done; used for heartbeats.
using ProgressFn = std::function<void(std::int64_t steps_done)>;

// Draws the next token of each row from logits [B, V] (fp32) with `gen`.
at::Tensor sample_next(const at::Tensor& logits, const SamplingParams& params, at::Generator& gen);

// Generates up to max_new tokens per row; stops early when every row has emitted <eos>.
Generation generate(QwenModel& model, const PromptBatch& prompts, std::int64_t max_new,
                    const SamplingParams& params, at::Generator& gen, bool use_kv_cache,
                    const ProgressFn& progress = {});

// generate() over `prompts` in batches of at most `max_seqs` rows, one after the other (the
// rollout engine's max_num_seqs: the KV cache and the prefill hold one batch at a time), drawing
// from `gen` in that order; the rows' responses joined, padded to the longest. `progress` sees
// the decoding steps of the batch running. With a single batch it is generate().
Generation generate_in_batches(QwenModel& model,
                               const std::vector<std::vector<std::int64_t>>& prompts,
                               std::int64_t max_seqs, std::int64_t max_new,
                               const SamplingParams& params, at::Generator& gen, bool use_kv_cache,
                               const ProgressFn& progress = {});

// RoPE positions for left-padded rows: the count of real tokens before each slot.
at::Tensor positions_from_valid(const at::Tensor& valid);

}  // namespace grpo::trainer
