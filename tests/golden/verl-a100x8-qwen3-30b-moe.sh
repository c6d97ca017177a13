#!/usr/bin/env bash
# verl GRPO run of qwen3-30b-moe on a100x8, written by grpo-launch VERSION (plan --emit verl; docs/verl-emit.md).
# Made with: grpo-launch plan --profile a100x8 --model qwen3-30b-moe --emit verl
# Check it before a run: grpo-launch check THIS_SCRIPT --profile a100x8
# Extra Hydra overrides given to this script are passed on to verl (they come last).
#
# Parallel Config Summary
# =======================
# Cluster   a100x8: 1 node x 8 A100-SXM4-80GB (80 GiB, nvlink 300 GB/s)
# Model     qwen3-30b-moe: 30.5B parameters (3.4B active), 48 layers, 32 heads / 4 KV heads, 128 experts (top 8)
# Workload  1024 prompts x 5 responses, 512 + 1024 tokens, mini batch 256, bf16, KL to reference
#
# Actor (Megatron-Core)    TP=1  PP=1  CP=1  DP=8  EP=8  ETP=1  EDP=1
#   micro batch            4 responses per device (40 micro batches per mini batch per DP rank)
#   sequence parallel      off
#   recompute              none
#   offload                params+cpu-optimizer
#   distributed optimizer  on
# Reference                same layout as the actor, forward only
# Rollout (vLLM)           TP=4, 2 replicas, gpu_memory_utilization 0.60, 1024 concurrent sequences per replica
# Communication            intra-node (1 node)
#
# Memory per device (GiB)        training   rollout
#   actor weights                     9.6       0.0
#   actor gradients                  19.2       0.0
#   actor optimizer states            0.0       0.0
#   activations                      38.0         -
#   logits                            7.0         -
#   reference weights                 0.0       0.0
#   rollout weights                     -      14.2
#   rollout workspace                   -       0.8
#   KV cache                            -      32.9   needs 36.0 for 1024 sequences of 1536 tokens
#   runtime overhead                  2.0       2.0
#   total                            75.8      50.0   of 76.0 usable (80.0 less 5% kept for the estimate's error)
#   floor (any data)                 30.9      50.0
#
# Estimated step 435 s: rollout 96.6, log-probs 112, training 168 + bubble 0.0, comm TP 0.0 EP 36.1 DP 0.1 PP 0.0, offload 22.2; MFU 29%
#
# Alternatives
#   2. TP=2 PP=1 DP=4 EP=8 ETP=1, rollout TP=4, micro batch 8, offload params+cpu-optimizer, recompute none: step 443 s, training 71.6 GiB, rollout 50.0 GiB
#   3. TP=1 PP=2 DP=4 EP=4 ETP=1, rollout TP=4, micro batch 4, offload params+cpu-optimizer, recompute none: step 445 s, training 64.6 GiB, rollout 50.0 GiB
#   4. TP=2 PP=2 DP=2 EP=4 ETP=1, rollout TP=4, micro batch 8, offload params+cpu-optimizer, recompute none: step 453 s, training 62.4 GiB, rollout 50.0 GiB
#
# Rejected
#   TP=8: KV_HEADS_NOT_DIVISIBLE, 4 KV heads (query groups) are not divisible by TP = 8 (Megatron-Core 0.15)
#
# Findings
#   warning KV_CACHE_SHORT: the rollout KV cache (32.9 GiB) holds 937 of 1024 concurrent sequences per replica (fix: raise gpu_memory_utilization or rollout TP, or accept slower rollout)
#
# Searched 112 parallel shapes (35 legal), estimated 1750 layouts, 277 fit

set -euo pipefail

# Edit these, or set them in the environment.
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-30B-A3B}
TRAIN_FILES=${TRAIN_FILES:-$HOME/data/gsm8k/train.parquet}
VAL_FILES=${VAL_FILES:-$HOME/data/gsm8k/test.parquet}

# The plan's environment (profile a100x8: [network], [env], the layout).
export GLOO_SOCKET_IFNAME=eth0
export NCCL_DEBUG=WARN
export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9
export NCCL_IB_TIMEOUT=22
export NCCL_SOCKET_IFNAME=eth0
export OMP_NUM_THREADS=16
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

python3 -m verl.trainer.main_ppo \
    --config-name=ppo_megatron_trainer \
    data.train_files="$TRAIN_FILES" \
    data.val_files="$VAL_FILES" \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    algorithm.adv_estimator=grpo \
    data.train_batch_size=1024 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.use_remove_padding=true \
    actor_rollout_ref.model.use_fused_kernels=false \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.ppo_epochs=1 \
    actor_rollout_ref.actor.use_kl_loss=true \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1 \
    actor_rollout_ref.actor.megatron.context_parallel_size=1 \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=8 \
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \
    actor_rollout_ref.actor.megatron.sequence_parallel=false \
    actor_rollout_ref.actor.megatron.use_distributed_optimizer=true \
    actor_rollout_ref.actor.megatron.param_offload=true \
    actor_rollout_ref.actor.megatron.grad_offload=false \
    actor_rollout_ref.actor.megatron.optimizer_offload=false \
    actor_rollout_ref.actor.megatron.use_remove_padding=true \
    actor_rollout_ref.actor.megatron.dtype=bfloat16 \
    actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=null \
    ++actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=true \
    ++actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=1 \
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=1 \
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=1 \
    actor_rollout_ref.ref.megatron.context_parallel_size=1 \
    actor_rollout_ref.ref.megatron.expert_model_parallel_size=8 \
    actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=1 \
    actor_rollout_ref.ref.megatron.param_offload=true \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.max_num_seqs=1024 \
    actor_rollout_ref.rollout.free_cache_engine=true \
    actor_rollout_ref.rollout.dtype=bfloat16 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    trainer.nnodes=1 \
    trainer.n_gpus_per_node=8 \
    'trainer.logger=["console"]' \
    trainer.save_freq=20 \
    trainer.project_name=grpo-launch \
    trainer.experiment_name=qwen3-30b-moe-a100x8 \
    "$@"
