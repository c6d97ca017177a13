// The memory estimator against numbers worked out by hand (docs/memory-model.md has the
// formulas). Every expected value below is derived in the comment above it.
#include <gtest/gtest.h>

#include "grpo/core/memory.h"
#include "test_support.h"

namespace grpo::core {
namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

Layout layout(int tp, int pp, int dp, int ep, int micro, int rollout_tp) {
  Layout l;
  l.dims = ParallelDims{tp, pp, 1, dp, ep, 1};
  l.micro_batch = micro;
  l.rollout_tp = rollout_tp;
  l.sequence_parallel = tp > 1;
  return l;
}

// Qwen2.5-7B (h 3584, 28 layers, 28 heads, 4 KV heads, head_dim 128, FFN 18944, vocab 152064,
// q/k/v bias, untied) on a100x8 with TP=2 PP=1 DP=4, micro batch 2, sequence 512+1024 = 1536.
TEST(Memory, Qwen25_7bByHand) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  const Layout l = layout(2, 1, 4, 1, 2, 2);
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);

  // Attention per layer: 2*h*q + 2*h*kv + (q + 2kv) bias = 2*3584*3584 + 2*3584*512 + 4608
  //   = 25,690,112 + 3,670,016 + 4,608 = 29,364,736; MLP 3*3584*18944 = 203,685,888.
  // Per device per layer: (29,364,736 + 203,685,888)/2 + norms 2*3584 = 116,532,480.
  // 28 layers: 3,262,909,440; embedding + LM head 2 * 152064*3584/2 = 544,997,376; final norm
  // 3,584. Total 3,807,910,400 parameters per device.
  EXPECT_DOUBLE_EQ(e.actor.total(), 3'807'910'400.0);
  EXPECT_DOUBLE_EQ(e.actor.expert, 0.0);
  // bf16 weights 2 B, fp32 gradients 4 B, Adam 12 B sharded over DP=4.
  EXPECT_DOUBLE_EQ(e.training.bytes("actor weights"), 7'615'820'800.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor gradients"), 15'231'641'600.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 11'423'731'200.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("reference weights"), 7'615'820'800.0);
  // Activations per token per layer (bf16, sequence parallel, TP=2):
  //   attention 4h/2 + 2(q + 2kv + q)/2 + 4*28/2 = 7,168 + 8,192 + 56 = 15,416
  //   MLP       4h/2 + 6*18944/2              = 7,168 + 56,832     = 64,000
  //   79,416 B x 3,072 tokens (2 x 1536) x 28 layers = 6,831,046,656 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 6'831'046'656.0);
  // Logits: 2.5 fp32 tensors of 3,072 tokens x 152064/2 vocabulary = 2,335,703,040 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 2'335'703'040.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("runtime overhead"), 2.0 * GiB);
  // 7,615,820,800 + 15,231,641,600 + 11,423,731,200 + 6,831,046,656 + 2,335,703,040
  //   + 7,615,820,800 + 2 GiB = 53,201,247,744 B = 49.55 GiB.
  EXPECT_DOUBLE_EQ(e.training.total(), 53'201'247'744.0);
  EXPECT_DOUBLE_EQ(e.training.capacity, 80.0 * GiB * 0.95);

  // Rollout at TP=2: weights 2 B x 7,615,616,512 / 2 = 7,615,616,512 B. KV per token:
  // 2 (K,V) x 28 layers x 2 KV heads per device x 128 x 2 B = 28,672 B. 4 replicas share
  // 5,120 responses: 1,280 each, capped at max_num_seqs 1,024: 1,024 x 1,536 x 28,672 B.
  EXPECT_DOUBLE_EQ(e.engine.weights, 7'615'616'512.0);
  EXPECT_DOUBLE_EQ(e.engine.kv_bytes_per_token, 28'672.0);
  EXPECT_EQ(e.engine.concurrent_seqs, 1024);
  EXPECT_DOUBLE_EQ(e.engine.kv_needed, 1024.0 * 1536.0 * 28672.0);
  EXPECT_DOUBLE_EQ(e.engine.budget, 80.0 * GiB * 0.6);
}

// Qwen3-30B-A3B (h 2048, 48 layers, 32 heads, 4 KV heads, head_dim 128, 128 experts top-8 of
// FFN 768, vocab 151936, q/k norms) on a100x8 with TP=2 EP=8 DP=4, micro batch 8, all offloads.
TEST(Memory, Qwen3_30bMoeByHand) {
  const auto m = test::model("qwen3-30b-moe");
  const auto c = test::cluster("a100x8");
  Layout l = layout(2, 1, 4, 8, 8, 4);
  l.offload = Offload{true, true, true, false};
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);

  // Attention per layer 2*2048*4096 + 2*2048*512 + q/k norms 256 = 18,874,624; /TP=2 = 9,437,312.
  // Non-expert per layer: 9,437,312 + norms 4,096 + router 2048*128 = 9,703,552; x48 =
  // 465,770,496; + embedding and LM head 151936*2048 (two halves of /2) = 311,164,928; + final
  // norm 2,048 = 776,937,472. Experts: 128 x 3 x 2048 x 768 / EP 8 = 75,497,472 per layer; x48 =
  // 3,623,878,656.
  EXPECT_DOUBLE_EQ(e.actor.non_expert, 776'937'472.0);
  EXPECT_DOUBLE_EQ(e.actor.expert, 3'623'878'656.0);
  // Adam 12 B: non-expert sharded over DP=4, experts over EDP = 8/(EP 8) = 1.
  //   12 x (194,234,368 + 3,623,878,656) = 45,817,356,288 B. verl loads offloaded optimizer
  //   states back for the whole update, so they count in training; offload frees them only
  //   during the rollout.
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 45'817'356'288.0);
  EXPECT_DOUBLE_EQ(e.rollout.bytes("actor optimizer states"), 0.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("reference weights"), 0.0);  // offloaded with the params
  // MoE layer activations per token (TP=2 with SP, ETP=1, top-8):
  //   attention 4*2048/2 + 2(4096+1024+4096)/2 + 4*32/2 = 4,096 + 9,216 + 64 = 13,376
  //   norms 4*2048/2 = 4,096; routed 8 x (4*2048 + 6*768)/2 = 51,200; router 8*128/2 = 512
  //   = 69,184 B x 12,288 tokens x 48 layers = 40,806,383,616 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 40'806'383'616.0);
  // Logits 2.5 x 12,288 x 151936/2 x 4 B = 9,334,947,840 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 9'334'947'840.0);
  // Rollout at TP=4: weights 2 x 30,532,122,624 / 4 = 15,266,061,312 B; KV per token
  // 2 x 48 x 1 x 128 x 2 = 24,576 B; workspace 8192 x (6*2048 + 3*8*768/4) x 2 + 1024 x 151936 x 4
  // = 899,153,920 B; KV capacity = 0.6 x 80 GiB - weights - workspace = 35,374,392,320 B.
  EXPECT_DOUBLE_EQ(e.engine.weights, 15'266'061'312.0);
  EXPECT_DOUBLE_EQ(e.engine.kv_bytes_per_token, 24'576.0);
  EXPECT_DOUBLE_EQ(e.engine.workspace, 899'153'920.0);
  EXPECT_DOUBLE_EQ(e.engine.kv_capacity, 35'374'392'320.0);
  EXPECT_TRUE(e.engine.weights_fit);
  // Rollout phase: everything offloaded, so only the engine and the overhead.
  EXPECT_DOUBLE_EQ(e.rollout.total(), 0.6 * 80.0 * GiB + 2.0 * GiB);
}

TEST(Memory, RecomputeKeepsOnlyLayerInputs) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  Layout l = layout(2, 1, 4, 1, 2, 2);
  l.recompute = Recompute::kFull;
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);
  // 2h/TP bytes per token per layer for 28 layers, plus one full layer being recomputed:
  // 3,584 x 3,072 x 28 + 79,416 x 3,072 = 308,281,344 + 243,965,952.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 308'281'344.0 + 243'965'952.0);
}

TEST(Memory, PipelineFirstStageHoldsInFlightMicroBatches) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  const Layout l = layout(2, 2, 2, 1, 2, 2);
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);
  // Stage 0 has 14 layers and 2 micro batches in flight (1F1B): 2 x 14 x 79,416 x 3,072 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 2.0 * 14 * 79'416.0 * 3072.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 0.0);  // those live on the last stage
}

TEST(Memory, FusedLogprobRemovesTheLogitsBuffer) {
  const auto m = test::model("qwen2.5-7b");
  auto c = test::cluster("a100x8", {{"grpo.fused_logprob", "true"}});
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, layout(2, 1, 4, 1, 2, 2));
  // One 16384-wide fp32 vocabulary chunk per token instead of 2.5 full logits tensors.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 3072.0 * 16384.0 * 4.0);
}

}  // namespace
}  // namespace grpo::core
