// The memory estimator against numbers worked out by hand (docs/memory-model.md has the
// formulas). Every expected value below is derived in the comment above it.
#include <gtest/gtest.h>

#include "grpo/plan/memory.h"
#include "test_support.h"

namespace grpo::core {
namespace {

using test::layout;

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// Qwen2.5-7B (h 3584, 28 layers, 28 heads, 4 KV heads, head_dim 128, FFN 18944, vocab 152064,
// q/k/v bias, untied) on a100x8 with TP=2 PP=1 DP=4, micro batch 2, sequence 512+1024 = 1536.
TEST(Memory, Qwen25_7bByHand) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  const Layout l = layout(2, 1, 4, 1, 1, 2, 2);
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
  // Logits: Megatron's vocab-parallel path holds 2 fp32 tensors of 3,072 tokens x 152064/2
  // vocabulary: 2 x 3,072 x 76,032 x 4 B = 1,868,562,432 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 1'868'562'432.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("runtime overhead"), 2.0 * GiB);
  // 7,615,820,800 + 15,231,641,600 + 11,423,731,200 + 6,831,046,656 + 1,868,562,432
  //   + 7,615,820,800 + 2 GiB = 52,734,107,136 B = 49.11 GiB.
  EXPECT_DOUBLE_EQ(e.training.total(), 52'734'107'136.0);
  // The floor: remove_padding (the default) lets a micro batch be one 1-token sequence, so
  // activations and logits shrink to one token: 79,416 x 28 and 2 x 76,032 x 4 B.
  EXPECT_DOUBLE_EQ(e.training.floor("activations"), 79'416.0 * 28);
  EXPECT_DOUBLE_EQ(e.training.floor("logits"), 2.0 * 76'032 * 4);
  EXPECT_DOUBLE_EQ(e.training.floor("actor weights"), 7'615'820'800.0);
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
  Layout l = layout(2, 1, 4, 8, 1, 8, 4);
  l.offload = Offload{true, true, true, false};
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);

  // Attention per layer 2*2048*4096 + 2*2048*512 = 18,874,368; /TP=2 = 9,437,184; + the q/k
  // norms 2*128 = 256, replicated in every TP rank = 9,437,440. Non-expert per layer: 9,437,440 +
  // norms 4,096 + router 2048*128 = 9,703,680; x48 = 465,776,640; + embedding and LM head
  // 151936*2048 (two halves of /2) = 311,164,928; + final norm 2,048 = 776,943,616. Experts:
  // 128 x 3 x 2048 x 768 / EP 8 = 75,497,472 per layer; x48 = 3,623,878,656.
  EXPECT_DOUBLE_EQ(e.actor.non_expert, 776'943'616.0);
  EXPECT_DOUBLE_EQ(e.actor.expert, 3'623'878'656.0);
  // Adam 12 B: non-expert sharded over DP=4, experts over EDP = 8/(EP 8) = 1.
  //   12 x (194,235,904 + 3,623,878,656) = 45,817,374,720 B. verl loads offloaded optimizer
  //   states back for the whole update, so they count in training; offload frees them only
  //   during the rollout.
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 45'817'374'720.0);
  EXPECT_DOUBLE_EQ(e.rollout.bytes("actor optimizer states"), 0.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("reference weights"), 0.0);  // offloaded with the params
  // MoE layer activations per token (TP=2 with SP, ETP=1, top-8):
  //   attention 4*2048/2 + 2(4096+1024+4096)/2 + 4*32/2 = 4,096 + 9,216 + 64 = 13,376
  //   norms 4*2048/2 = 4,096; routed 8 x (4*2048 + 6*768)/2 = 51,200; router 8*128/2 = 512
  //   = 69,184 B x 12,288 tokens x 48 layers = 40,806,383,616 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 40'806'383'616.0);
  // Logits 2 x 12,288 x 151936/2 x 4 B = 7,467,958,272 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 7'467'958'272.0);
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
  Layout l = layout(2, 1, 4, 1, 1, 2, 2);
  l.recompute = Recompute::kFull;
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);
  // 2h/TP bytes per token per layer for 28 layers, plus one full layer being recomputed:
  // 3,584 x 3,072 x 28 + 79,416 x 3,072 = 308,281,344 + 243,965,952.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 308'281'344.0 + 243'965'952.0);
}

TEST(Memory, PipelineFirstStageHoldsInFlightMicroBatches) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  const Layout l = layout(2, 2, 2, 1, 1, 2, 2);
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, l);
  // Stage 0 has 14 layers and 2 micro batches in flight (1F1B): 2 x 14 x 79,416 x 3,072 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 2.0 * 14 * 79'416.0 * 3072.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 0.0);  // those live on the last stage
}

TEST(Memory, FusedLogprobRemovesTheLogitsBuffer) {
  const auto m = test::model("qwen2.5-7b");
  auto c = test::cluster("a100x8", {{"grpo.fused_logprob", "true"}});
  const MemoryEstimate e = estimate_memory(m, c, c.grpo, layout(2, 1, 4, 1, 1, 2, 2));
  // One 64 MiB chunk of token rows over the whole vocabulary plus 16 B of statistics a token,
  // instead of two full logits tensors (bench/kernels/RESULTS.md: 1.30 GiB above the inputs,
  // 1.19 GiB of which are the gradients): 67,108,864 + 3,072 x 16 B.
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 67'108'864.0 + 3072.0 * 16.0);
}

// Megatron recompute options, Qwen2.5-7B TP=2 as above (79,416 B per token per layer, layer
// input 2h/TP = 3,584 B, 3,072 tokens, 28 layers, one layer 79,416 x 3,072 = 243,965,952 B).
TEST(Memory, RecomputeMethodsUniformAndBlock) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  Layout l = layout(2, 1, 4, 1, 1, 2, 2);
  l.recompute = Recompute::kFull;
  l.recompute_layers = 4;
  // uniform, 4 layers a group: 7 group inputs kept, one group of 4 layers recomputed at a time:
  //   3,584 x 3,072 x 7 + 4 x 243,965,952 = 77,070,336 + 975,863,808.
  EXPECT_DOUBLE_EQ(estimate_memory(m, c, c.grpo, l).training.bytes("activations"),
                   77'070'336.0 + 975'863'808.0);
  // block, 4 layers: those 4 keep only their inputs, the other 24 everything, plus one layer:
  //   3,584 x 3,072 x 4 + 24 x 243,965,952 + 243,965,952.
  l.recompute_method = RecomputeMethod::kBlock;
  EXPECT_DOUBLE_EQ(estimate_memory(m, c, c.grpo, l).training.bytes("activations"),
                   44'040'192.0 + 24 * 243'965'952.0 + 243'965'952.0);
}

// use_dynamic_bsz caps a micro batch at ppo_max_token_len_per_gpu tokens whatever the micro
// batch size: 4,096 tokens x 79,416 B x 28 layers; logits 2 x 4,096 x 76,032 x 4 B.
TEST(Memory, DynamicBatchSizeCapsTheTokens) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  w.max_token_len_per_gpu = 4096;
  const MemoryEstimate e = estimate_memory(m, c, w, layout(2, 1, 4, 1, 1, 16, 2));
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 4096.0 * 79'416 * 28);
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 2.0 * 4096 * 76'032 * 4);
}

// Without remove_padding every sequence is padded to 512 + 1024 tokens: the floor is the worst
// case. And where it stops fitting: fixed state 44,034,498,048 B (weights, gradients, Adam over
// DP 4, reference, 2 GiB overhead, Qwen25_7bByHand) of 0.95 x 80 GiB = 81,604,378,624 B leaves
// 37,569,880,576 B; a token costs 79,416 x 28 + 2 x 76,032 x 4 = 2,831,904 B: 13,266 tokens,
// 8 sequences of at most 1,658 tokens: responses up to 1,658 - 512 = 1,146 tokens fit.
TEST(Memory, PaddedFloorAndLongestFittingResponse) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  w.remove_padding = false;
  w.max_response_length = 2048;
  const Layout l = layout(2, 1, 4, 1, 1, 8, 2);
  const MemoryEstimate e = estimate_memory(m, c, w, l);
  EXPECT_DOUBLE_EQ(e.training.floor("activations"), e.training.bytes("activations"));
  EXPECT_FALSE(e.training.fits());
  EXPECT_EQ(longest_fitting_response(m, c, w, l), std::optional<std::int64_t>(1146));
  w.remove_padding = true;
  EXPECT_TRUE(estimate_memory(m, c, w, l).training.floor_fits());
}

// free_cache_engine=False keeps the rollout engine's budget (0.6 x 80 GiB) during training;
// optimizer_offload_fraction 0.5 of the CPU optimizer keeps half the Adam states on the device.
TEST(Memory, KeptEngineAndPartialCpuOptimizer) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  w.free_cache_engine = false;
  Layout l = layout(2, 1, 4, 1, 1, 2, 2);
  l.offload.cpu_optimizer = true;
  l.offload.cpu_optimizer_fraction = 0.5;
  const MemoryEstimate e = estimate_memory(m, c, w, l);
  EXPECT_DOUBLE_EQ(e.training.bytes("rollout engine (kept)"), 0.6 * 80 * GiB);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 11'423'731'200.0 / 2);
}

// LoRA r=32 on every linear projection of Qwen2.5-7B: per layer q 32 x (3584 + 3584) = 229,376,
// k and v 32 x (3584 + 512) = 131,072 each, o 229,376, gate/up/down 32 x (3584 + 18944) =
// 720,896 each: 2,883,584; x 28 layers = 80,740,352 (what PEFT prints for this model: "trainable
// params: 80,740,352 || all params: 7,696,356,864").
TEST(Memory, LoraParamsByHand) {
  const auto m = test::model("qwen2.5-7b");
  LoraSpec lora;
  lora.rank = 32;
  EXPECT_DOUBLE_EQ(lora_params(m, lora), 80'740'352.0);
  lora.targets = {"q_proj", "v_proj"};
  EXPECT_DOUBLE_EQ(lora_params(m, lora), 28.0 * (229'376 + 131'072));
  lora.rank = 0;
  EXPECT_DOUBLE_EQ(lora_params(m, lora), 0.0);
}

Layout fsdp_layout(int world, int micro) {
  Layout l;
  l.backend = Backend::kFsdp;
  l.dims = ParallelDims{1, 1, 1, world, 1, 1};
  l.micro_batch = micro;
  l.rollout_tp = 1;
  l.recompute = Recompute::kFull;  // verl's enable_gradient_checkpointing default
  return l;
}

// verl's FSDP strategy, Qwen2.5-7B (P = 7,615,616,512) over 8 GPUs, micro batch 4 of 1,536 tokens:
//   fp32 shard 4P/8 = 3,807,808,256 B; the gathered bf16 layer (the embedding, 152064 x 3584, is
//   the largest), two in flight: 2 x 2 x 544,997,376 = 2,179,989,504 B; Adam 8P/8.
//   Activations (TP 1, no SP): per token per layer attention 4h + 2(q + 2kv + q) + 4 x 28 =
//   30,832, MLP 4h + 6 x 18944 = 128,000, so 158,832; checkpointing keeps 2h = 7,168 a layer:
//   7,168 x 6,144 x 28 + 158,832 x 6,144. Unfused logits 3.5 x 6,144 x 152,064 x 4 B.
TEST(Memory, FsdpByHand) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  const MemoryEstimate e = estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4));
  EXPECT_DOUBLE_EQ(e.training.bytes("actor weights"), 3'807'808'256.0 + 2'179'989'504.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor gradients"), 3'807'808'256.0 + 2'179'989'504.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 7'615'616'512.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 1'233'125'376.0 + 975'863'808.0);
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 3.5 * 6144 * 152'064 * 4);
  EXPECT_DOUBLE_EQ(e.training.bytes("reference weights"), 0.0);  // on the host in verl's FSDP
  // The floor: one 1-token sequence.
  EXPECT_DOUBLE_EQ(e.training.floor("activations"), 7'168.0 * 28 + 158'832.0);
  // entropy_from_logits_with_chunking: bf16 logits and gradient (4 B a value) plus one fp32
  // chunk of 2,048 rows with softmax and output (7 B a value).
  w.entropy_chunking = true;
  EXPECT_DOUBLE_EQ(estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4)).training.bytes("logits"),
                   6144.0 * 152'064 * 4 + 2048.0 * 152'064 * 7);
  // Ulysses SP 2 splits every sequence: half the tokens per device.
  Layout sp = fsdp_layout(8, 4);
  sp.dims.cp = 2;  // the FSDP layout carries the Ulysses size as its CP
  sp.dims.dp = 4;
  w.entropy_chunking = false;
  EXPECT_DOUBLE_EQ(estimate_fsdp_memory(m, c, w, sp).training.bytes("logits"),
                   3.5 * 3072 * 152'064 * 4);
}

// verl's prefix grouper (actor.use_prefix_grouper without remove_padding; docs/memory-model.md
// "verl's prefix grouper") on the FsdpByHand set-up: n = 5 responses a prompt, micro batch B = 4,
// a rank's mini batch 256 x 5 / 8 = 160 rows. Micro batch k starts at row 4k, which is offset
// 4k mod 5 into a prompt's run of 5; the offsets repeat after 5 micro batches:
//   k=0 offset 0: one row of prompt + 4 responses            -> 1 x (512 + 4 x 1024) = 4,608
//   k=1 offset 4: rows of 1 and 3 responses, padded to 3     -> 2 x (512 + 3 x 1024) = 7,168
//   k=2 offset 3: rows of 2 and 2                            -> 2 x (512 + 2 x 1024) = 5,120
//   k=3 offset 2: rows of 3 and 1                            -> 2 x (512 + 3 x 1024) = 7,168
//   k=4 offset 1: one row of 4                               -> 4,608
// The worst is 7,168 concatenated tokens (the plain padded path has 4 x 1,536 = 6,144).
// Activations stay 7,168 B a layer input (28 layers) + 158,832 B of the recomputed layer per
// token. Logits: the model's bf16 logits over the 7,168 tokens (2 B), the split bf16 response rows
// (4 x 1,024 tokens, 2 B), and the unfused path's 3.5 fp32 tensors over those 4,096 tokens.
TEST(Memory, FsdpPrefixGrouperByHand) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  w.prefix_grouper = true;
  w.remove_padding = false;
  const MemoryEstimate e = estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4));
  EXPECT_DOUBLE_EQ(e.training.bytes("activations"), (7'168.0 * 28 + 158'832.0) * 7'168);
  EXPECT_DOUBLE_EQ(e.training.bytes("logits"),
                   152'064.0 * (2 * 7'168 + 2 * 4'096) + 3.5 * 4'096 * 152'064 * 4);
  // The grouper packs only real tokens: the floor is one 1-token row, as with remove_padding.
  EXPECT_DOUBLE_EQ(e.training.floor("activations"), 7'168.0 * 28 + 158'832.0);
  // With remove_padding verl's actor takes its packed path and ignores the grouper
  // (dp_actor.py _forward_micro_batch): the FsdpByHand numbers.
  w.remove_padding = true;
  EXPECT_DOUBLE_EQ(estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4)).training.bytes("logits"),
                   3.5 * 6144 * 152'064 * 4);
}

// The rollout phase of FsdpByHand under verl's two workers: the legacy worker keeps the actor's
// fp32 shards (4 x 7,615,616,512 / 8 = 3,807,808,256 B) and Adam's states (8 x P / 8) on the
// device; the model-engine worker (trainer.use_legacy_worker_impl=disable) moves the model to the
// host after the weight sync (engine_workers.py update_weights) and keeps only the states.
TEST(Memory, EngineWorkerMovesTheActorModelForTheRollout) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8");
  WorkloadSpec w = c.grpo;
  const MemoryEstimate legacy = estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4));
  EXPECT_DOUBLE_EQ(legacy.rollout.bytes("actor weights"), 3'807'808'256.0);
  EXPECT_DOUBLE_EQ(legacy.rollout.bytes("actor optimizer states"), 7'615'616'512.0);
  w.engine_worker = true;
  const MemoryEstimate engine = estimate_fsdp_memory(m, c, w, fsdp_layout(8, 4));
  EXPECT_DOUBLE_EQ(engine.rollout.bytes("actor weights"), 0.0);
  EXPECT_DOUBLE_EQ(engine.rollout.bytes("actor optimizer states"), 7'615'616'512.0);
  EXPECT_DOUBLE_EQ(legacy.rollout.total() - engine.rollout.total(), 3'807'808'256.0);
  // The training phase does not change: the update loads the model back.
  EXPECT_DOUBLE_EQ(legacy.training.total(), engine.training.total());
}

// LoRA on one GPU (verl's 7B LoRA example): the base stays frozen in bf16 (2P), the adapters
// (A = 80,740,352) have fp32 weights, gradients and Adam moments: 4A + 4A + 8A; the reference is
// the actor with its adapters off. Full fine-tuning would need 16P = 113 GiB of state alone.
TEST(Memory, FsdpLoraOnOneGpu) {
  const auto m = test::model("qwen2.5-7b");
  const auto c = test::cluster("a100x8", {{"nodes", "1"}, {"gpus_per_node", "1"}});
  WorkloadSpec w = c.grpo;
  w.lora.rank = 32;
  const MemoryEstimate e = estimate_fsdp_memory(m, c, w, fsdp_layout(1, 4));
  const double adapters = 80'740'352.0;
  EXPECT_DOUBLE_EQ(e.training.bytes("actor weights"),
                   2.0 * 7'615'616'512 + 2'179'989'504.0 + 4.0 * adapters);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor gradients"), 4.0 * adapters);
  EXPECT_DOUBLE_EQ(e.training.bytes("actor optimizer states"), 8.0 * adapters);
  EXPECT_TRUE(e.training.floor_fits());
}

// grpo-trainer's own activation model (Layout::embedded_trainer; docs/memory-model.md "The
// embedded trainer's activations"), fp32, micro batches of sequences of S = 11 tokens.
TEST(Memory, EmbeddedTrainerActivationsByHand) {
  const auto c = test::cluster("local-cpu");
  WorkloadSpec w = c.grpo;
  w.max_prompt_length = 10;
  w.max_response_length = 1;
  w.max_token_len_per_gpu = 0;  // fixed micro batches
  auto estimate = [&](const char* model, Layout l) {
    l.backend = Backend::kEmbedded;
    l.distributed_optimizer = false;
    return estimate_memory(test::model(model), c, w, l);
  };
  {
    // tiny-dense (h 128, 4 layers, 4 heads x 32, 2 KV heads, FFN 384, vocab 64, q/k norms), TP 1,
    // micro batch 4: 44 tokens. Per token and layer:
    //   attention 4*(2*128 + 128) + 4*(128 + 64) + 4*(2*128 + 2*64) + 4*4*11
    //           = 1,536 + 768 + 1,536 + 176 = 4,016
    //   dense     4,016 + 4*128 + 4*4*384 = 4,016 + 512 + 6,144 = 10,672
    // x 4 layers x 44 tokens = 1,878,272, plus the larger backward transient: the largest
    // weight's gradient (gate/up/down, 384 x 128 x 4 B = 196,608), not one layer's attention
    // backward ((4 + 4) x 4 heads x 11 keys x 44 = 15,488): 2,074,880.
    // Last stage: 4*128*(1 + 1) x 44 = 45,056, and the fused log-prob kernel's buffers for the
    // response tokens (1 of each 11-token sequence: 4) 4 x 64 x 4 + 16 x 4 = 1,088: 46,144.
    const MemoryEstimate e = estimate("tiny-dense", layout(1, 1, 2, 1, 1, 4));
    EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 2'074'880.0);
    EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 46'144.0);
  }
  {
    // tiny-moe (every layer MoE: 8 experts of FFN 128, top 2, a gated shared expert of 128), TP 2
    // with SP and ETP 2, micro batch 8: 88 tokens; rows r = 1/2, routed rows x = r * 2 = 1.
    //   attention 4*(2*128/2 + 128) + 4*192/2 + 4*384/2 + 4*(4/2)*11 = 1,024 + 384 + 768 + 88
    //           = 2,264
    //   MoE       2,264 + 4*(128 + 8)/2 + 4*2*(2*128 + 4*128/2)*1 + 4*128 + 4*4*128/2
    //             + 4*128/2 = 2,264 + 272 + 4,096 + 512 + 1,024 + 256 = 8,424
    // x 4 layers x 88 = 2,965,248; the last MoE layer's temporaries 4*(2*128 + 2*128)*1 x 88 =
    // 180,224; the largest weight's gradient 64 x 128 x 4 = 32,768 (an expert's half, or the
    // shared expert's; more than the attention backward's (4 + 4) x 2 x 11 x 88 = 15,488):
    // 3,178,240.
    // Last stage: 4*128*(1/2 + 1) x 88 = 67,584 and two fp32 logits tensors of the 8 response
    // tokens x 64/2: 2,048; 69,632.
    const MemoryEstimate e = estimate("tiny-moe", layout(2, 1, 1, 1, 2, 8));
    EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 3'178'240.0);
    EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 69'632.0);
  }
  {
    // tiny-dense as above with bf16 parameters (grpo.dtype = bf16): 2-byte activations, but the
    // softmax's fp32 output is kept next to its bf16 copy (4 + 2 bytes), and the largest
    // gradient (bf16) goes into the fp32 main gradient through an fp32 copy (2 + 4 bytes).
    //   attention 2*(2*128 + 128) + 2*(128 + 64) + 2*(2*128 + 2*64) + 6*4*11
    //           = 768 + 384 + 768 + 264 = 2,184
    //   dense     2,184 + 2*128 + 2*4*384 = 2,184 + 256 + 3,072 = 5,512
    // x 4 layers x 44 tokens = 970,112, plus 384 x 128 x 6 = 294,912 (the attention backward's
    // (2 + 4) x 4 x 11 x 44 = 11,616 is smaller): 1,265,024.
    // Last stage: 2*128*(1 + 1) x 44 = 22,528 and the fused kernel's fp32 buffers 1,088: 23,616.
    w.dtype = Dtype::kBf16;
    const MemoryEstimate e = estimate("tiny-dense", layout(1, 1, 2, 1, 1, 4));
    EXPECT_DOUBLE_EQ(e.training.bytes("activations"), 1'265'024.0);
    EXPECT_DOUBLE_EQ(e.training.bytes("logits"), 23'616.0);
  }
}

TEST(Memory, EmbeddedTrainerKeepsItsRolloutWeights) {
  const auto c = test::cluster("local-cpu");
  const WorkloadSpec w = c.grpo;  // fp32
  auto kept = [&](const char* model, Layout l) {
    l.backend = Backend::kEmbedded;
    l.distributed_optimizer = false;
    const MemoryEstimate e = estimate_memory(test::model(model), c, w, l);
    EXPECT_DOUBLE_EQ(e.training.bytes("rollout weights (kept)"),
                     e.rollout.bytes("rollout weights (kept)"));
    return e.training.bytes("rollout weights (kept)");
  };
  // Rollout TP 1 under TP x EP: a whole copy, tiny-moe's 1,988,480 parameters x 4 bytes.
  EXPECT_DOUBLE_EQ(kept("tiny-moe", layout(2, 1, 1, 2, 1, 1, 1)), 7'953'920.0);
  // Generating at the training layout keeps nothing more.
  EXPECT_DOUBLE_EQ(kept("tiny-moe", layout(2, 1, 1, 2, 1, 1, 2)), 0.0);
  // PP = 2 (tiny-dense, 2 + 2 layers of 196,928 parameters: q 16,384, k and v 8,192 each,
  // o 16,384, q/k norms 64, layer norms 256, MLP 3 x 128 x 384 = 147,456): the first stage
  // trains the embedding (8,192) and 2 layers, 402,048 parameters; the last 2 layers, the final
  // norm (128) and the LM head (8,192), 402,176: the worst. Each rank keeps every layer for the
  // rollout, so the worst stage keeps the first stage's 402,048 x 4 = 1,608,192 bytes more.
  EXPECT_DOUBLE_EQ(kept("tiny-dense", layout(1, 2, 1)), 1'608'192.0);
}

TEST(Memory, EmbeddedTrainerGeneratesWhatFits) {
  const auto c = test::cluster("local-cpu");
  WorkloadSpec w = c.grpo;  // 16 prompts x 4, prompts of 24 tokens, 16 new, max_num_seqs 64, fp32
  Layout l = layout(1, 1, 2);
  l.backend = Backend::kEmbedded;
  l.distributed_optimizer = false;
  const MemoryEstimate e = estimate_memory(test::model("tiny-dense"), c, w, l);
  // Each rank generates its 16 x 4 / 2 = 32 rows at once (under max_num_seqs, and they fit).
  EXPECT_EQ(e.embedded_rollout_seqs, 32);
  // KV cache: 2 x 4 layers x 32 sequences x 64 (2 K/V heads x 32) x (24 + 16) tokens x 4 B.
  EXPECT_DOUBLE_EQ(e.rollout.bytes("KV cache"), 2'621'440.0);
  // Workspace: the prefill's MLP step, 4 x 32 x 24 x (2 x 128 + 3 x 384) = 4,325,376 (more than
  // its attention step, 8 x 32 x 4 x 24^2 + 4 x 32 x 24 x (2 x 128 + 2 x 128 + 2 x 64) =
  // 2,555,904), plus sampling's 3 x 4 x 32 x 64 = 24,576.
  EXPECT_DOUBLE_EQ(e.rollout.bytes("rollout workspace"), 4'349'952.0);
  // A smaller device holds fewer at a time: the room beside the resident state, per sequence.
  ClusterProfile small = c;
  small.device.memory_gib = 0.5442;  // 95% usable: about 2 MB left beside the resident state
  const MemoryEstimate s = estimate_memory(test::model("tiny-dense"), small, w, l);
  const double per_seq = (2'621'440.0 + 4'349'952.0) / 32.0;
  const double resident =
      s.rollout.total() - s.rollout.bytes("KV cache") - s.rollout.bytes("rollout workspace");
  EXPECT_EQ(s.embedded_rollout_seqs,
            static_cast<std::int64_t>((s.rollout.capacity - resident) / per_seq));
  EXPECT_LT(s.embedded_rollout_seqs, 32);
  EXPECT_TRUE(s.rollout.fits());
}

}  // namespace
}  // namespace grpo::core
