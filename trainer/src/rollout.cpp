#include "grpo/trainer/rollout.h"

#include <algorithm>
#include <limits>

#include "grpo/trainer/tasks.h"

namespace grpo::trainer {

PromptBatch make_prompt_batch(const std::vector<std::vector<std::int64_t>>& prompts) {
  std::size_t len = 1;
  for (const auto& p : prompts) len = std::max(len, p.size());
  const auto b = static_cast<std::int64_t>(prompts.size());
  const auto p_len = static_cast<std::int64_t>(len);
  PromptBatch out{at::full({b, p_len}, Tokenizer::kPad, at::kLong),
                  at::zeros({b, p_len}, at::kBool)};
  auto tok = out.tokens.accessor<std::int64_t, 2>();
  auto val = out.valid.accessor<bool, 2>();
  for (std::int64_t r = 0; r < b; ++r) {
    const auto& p = prompts[static_cast<std::size_t>(r)];
    const std::int64_t off = p_len - static_cast<std::int64_t>(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      tok[r][off + static_cast<std::int64_t>(i)] = p[i];
      val[r][off + static_cast<std::int64_t>(i)] = true;
    }
  }
  return out;
}

at::Tensor positions_from_valid(const at::Tensor& valid) {
  return (valid.to(at::kLong).cumsum(1) - 1).clamp_min(0);
}

at::Tensor sample_next(const at::Tensor& logits_in, const SamplingParams& p, at::Generator& gen) {
  if (p.greedy) return logits_in.argmax(-1);
  at::Tensor logits = logits_in;
  if (p.temperature != 1.0) logits = logits / p.temperature;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (p.top_k > 0 && p.top_k < logits.size(-1)) {
    at::Tensor kth = std::get<0>(logits.topk(p.top_k, -1)).narrow(-1, p.top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, neg_inf);
  }
  at::Tensor probs = at::softmax(logits, -1);
  if (p.top_p < 1.0) {
    // Keep the smallest prefix of the sorted distribution whose mass reaches top_p (the most
    // likely token is always kept), as Hugging Face's TopPLogitsWarper.
    auto [sorted, idx] = probs.sort(-1, /*descending=*/true);
    at::Tensor before = sorted.cumsum(-1) - sorted;
    sorted = sorted.masked_fill(before > p.top_p, 0.0);
    probs = at::zeros_like(probs).scatter(-1, idx, sorted);
  }
  return at::multinomial(probs, 1, /*replacement=*/false, gen).squeeze(-1);
}

Generation generate(QwenModel& model, const PromptBatch& prompts, std::int64_t max_new,
                    const SamplingParams& params, at::Generator& gen, bool use_kv_cache,
                    const ProgressFn& progress) {
  torch::NoGradGuard no_grad;
  const std::int64_t b = prompts.tokens.size(0);
  const std::int64_t p_len = prompts.tokens.size(1);
  const std::int64_t cap = p_len + max_new;

  at::Tensor seq = at::full({b, cap}, Tokenizer::kPad, at::kLong);
  at::Tensor key_valid = at::zeros({b, cap}, at::kBool);
  seq.narrow(1, 0, p_len).copy_(prompts.tokens);
  key_valid.narrow(1, 0, p_len).copy_(prompts.valid);

  KvCache cache;
  if (use_kv_cache) cache = model.make_cache(b, cap);
  at::Tensor next_pos = prompts.valid.to(at::kLong).sum(1);  // [B]

  // Prefill.
  ModelOutput out = model.forward(prompts.tokens, positions_from_valid(prompts.valid),
                                  prompts.valid, prompts.valid, use_kv_cache ? &cache : nullptr);
  at::Tensor logits = model.logits(out.hidden.select(1, p_len - 1));

  at::Tensor finished = at::zeros({b}, at::kBool);
  std::int64_t steps = 0;
  bool done_here = false;  // every row of this rank has finished
  for (std::int64_t t = 0; t < max_new; ++t) {
    at::Tensor live = finished.logical_not();
    // A rank whose rows have all finished keeps stepping (padding) while its expert-parallel
    // peers still decode, without drawing from its generator: its stream stays where a rank
    // that stopped would leave it.
    at::Tensor tok =
        done_here ? at::full({b}, Tokenizer::kPad, at::kLong) : sample_next(logits, params, gen);
    tok = at::where(live, tok, at::full({}, Tokenizer::kPad, at::kLong));
    seq.select(1, p_len + t).copy_(tok);
    key_valid.select(1, p_len + t).copy_(live);
    for (const std::int64_t eos : params.eos_ids) finished = finished.logical_or(tok == eos);
    steps = t + 1;
    if (progress) progress(steps);
    done_here = finished.all().item<bool>();
    if (t + 1 == max_new || model.all_ranks(done_here)) break;

    const std::int64_t len = p_len + t + 1;
    if (use_kv_cache) {
      out = model.forward(tok.unsqueeze(1), next_pos.unsqueeze(1), key_valid.narrow(1, 0, len),
                          live.unsqueeze(1), &cache);
      logits = model.logits(out.hidden.select(1, 0));
    } else {
      at::Tensor kv = key_valid.narrow(1, 0, len);
      out = model.forward(seq.narrow(1, 0, len), positions_from_valid(kv), kv, kv, nullptr);
      logits = model.logits(out.hidden.select(1, len - 1));
    }
    next_pos = next_pos + live.to(at::kLong);
  }

  Generation g;
  g.tokens = seq.narrow(1, p_len, steps).clone();
  g.valid = key_valid.narrow(1, p_len, steps).clone();
  g.generated_tokens = g.valid.sum().item<std::int64_t>();
  return g;
}

Generation generate_in_batches(QwenModel& model,
                               const std::vector<std::vector<std::int64_t>>& prompts,
                               std::int64_t max_seqs, std::int64_t max_new,
                               const SamplingParams& params, at::Generator& gen, bool use_kv_cache,
                               const ProgressFn& progress) {
  const auto rows = static_cast<std::int64_t>(prompts.size());
  const std::int64_t size = std::max<std::int64_t>(1, max_seqs);
  if (rows <= size) {
    return generate(model, make_prompt_batch(prompts), max_new, params, gen, use_kv_cache,
                    progress);
  }
  std::vector<Generation> parts;
  std::int64_t steps = 0;
  for (std::int64_t first = 0; first < rows; first += size) {
    const auto begin = prompts.begin() + first;
    const std::vector<std::vector<std::int64_t>> batch(begin, begin + std::min(size, rows - first));
    parts.push_back(
        generate(model, make_prompt_batch(batch), max_new, params, gen, use_kv_cache, progress));
    steps = std::max(steps, parts.back().tokens.size(1));
  }
  Generation out;
  out.tokens = at::full({rows, steps}, Tokenizer::kPad, at::kLong);
  out.valid = at::zeros({rows, steps}, at::kBool);
  std::int64_t row = 0;
  for (const Generation& g : parts) {
    const std::int64_t n = g.tokens.size(0);
    const std::int64_t len = g.tokens.size(1);
    out.tokens.narrow(0, row, n).narrow(1, 0, len).copy_(g.tokens);
    out.valid.narrow(0, row, n).narrow(1, 0, len).copy_(g.valid);
    out.generated_tokens += g.generated_tokens;
    row += n;
  }
  return out;
}

}  // namespace grpo::trainer
