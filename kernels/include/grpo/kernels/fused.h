// The fused backend with explicit chunk sizes: tests shrink the chunks to exercise partial ones,
// benchmarks vary them. ops_for(Backend::kFused) is make_fused_ops() with the defaults.
// Algorithms, chunk sizes and numerics: docs/kernels.md.
#pragma once

#include <cstdint>
#include <memory>

#include "grpo/kernels/ops.h"

namespace grpo::kernels {

struct FusedOptions {
  // The policy loss with gradients holds the fp32 logits of one chunk of tokens over the whole
  // vocabulary, [rows, V], and turns them into their gradient in place: rows = this budget / (4 V),
  // at least 1, a multiple of 16 when larger.
  std::int64_t grad_chunk_bytes = std::int64_t{64} << 20;
  // Columns per block of the online log-sum-exp (every path) and of the block-wise passes.
  std::int64_t vocab_block = 8192;
  // The forward-only log-probs and the recomputing backward of token_logprobs hold [rows,
  // vocab_block] fp32 logits: rows = this budget / (4 vocab_block), at least 1.
  std::int64_t block_bytes = std::int64_t{16} << 20;
  // If > 0, at most this many token rows per chunk in every path (tests use small values).
  std::int64_t max_token_chunk = 0;
};

// A fused Ops. Inputs may be fp32 or bf16/fp16 (computed in fp32; see docs/kernels.md); fp64
// inputs are handed to the reference implementation. CUDA tensors go to the CUDA kernels when the
// library was built with them and LibTorch has CUDA, and are refused otherwise.
std::unique_ptr<Ops> make_fused_ops(const FusedOptions& options = {});

}  // namespace grpo::kernels
