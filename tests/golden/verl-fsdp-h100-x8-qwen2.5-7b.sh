#!/usr/bin/env bash
# verl GRPO run of qwen2.5-7b on h100-x8, written by grpo-launch VERSION (plan --emit verl; docs/verl-emit.md).
# Made with: grpo-launch plan --profile h100-x8 --model qwen2.5-7b --set backend=fsdp --emit verl
# Check it before a run: grpo-launch check THIS_SCRIPT --profile h100-x8
# Extra Hydra overrides given to this script are passed on to verl (they come last).
#
# Parallel Config Summary
# =======================
# Cluster   h100-x8: 8 nodes x 8 H100-SXM5-80GB (80 GiB, nvlink 450 GB/s, infiniband 200 GB/s per node)
# Model     qwen2.5-7b: 7.6B parameters, 28 layers, 28 heads / 4 KV heads
# Workload  1024 prompts x 5 responses, 512 + 1024 tokens, mini batch 256, bf16, KL to reference
#
# Actor (FSDP)             TP=1  PP=1  CP=1  DP=64  (every state sharded over all ranks)
#   micro batch            4 responses per device (5 micro batches per mini batch per DP rank)
#   sequence parallel      off
#   recompute              none
#   offload                none
# Reference                same layout as the actor, forward only
# Rollout (vLLM)           TP=1, 64 replicas, gpu_memory_utilization 0.60, 80 concurrent sequences per replica
# Communication            hierarchical: TP inside nodes where possible, DP across 8 nodes
#
# Memory per device (GiB)        training   rollout
#   actor weights                     2.5       0.4
#   actor gradients                   2.5       0.0
#   actor optimizer states            0.9       0.9
#   activations                      25.4         -
#   logits                           12.2         -
#   reference weights                 0.0       0.0
#   rollout weights                     -      14.2
#   rollout workspace                   -       1.2
#   KV cache                            -      32.6   needs 6.6 for 80 sequences of 1536 tokens
#   runtime overhead                  2.0       2.0
#   total                            45.5      51.3   of 76.0 usable (80.0 less 5% kept for the estimate's error)
#   floor (any data)                  7.8      51.3
#
# Estimated step 31.0 s: rollout 7.6, log-probs 9.4, training 14.0 + bubble 0.0, comm TP 0.0 EP 0.0 DP 0.0 PP 0.0, offload 0.0; MFU 35%
#
# Searched 1 parallel shapes (1 legal), estimated 24 layouts, 24 fit

set -euo pipefail

# Edit these, or set them in the environment.
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-7B-Instruct}
TRAIN_FILES=${TRAIN_FILES:-$HOME/data/gsm8k/train.parquet}
VAL_FILES=${VAL_FILES:-$HOME/data/gsm8k/test.parquet}

# The plan's environment (profile h100-x8: [network], [env], the layout).
export GLOO_SOCKET_IFNAME=bond0
export NCCL_DEBUG=WARN
export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3
export NCCL_IB_QPS_PER_CONNECTION=2
export NCCL_IB_TIMEOUT=22
export NCCL_SOCKET_IFNAME=bond0
export OMP_NUM_THREADS=24
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

python3 -m verl.trainer.main_ppo \
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
    actor_rollout_ref.actor.strategy=fsdp \
    actor_rollout_ref.ref.strategy=fsdp \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=1 \
    actor_rollout_ref.model.enable_gradient_checkpointing=false \
    actor_rollout_ref.actor.fsdp_config.param_offload=false \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=false \
    actor_rollout_ref.ref.fsdp_config.param_offload=false \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.max_num_seqs=1024 \
    actor_rollout_ref.rollout.free_cache_engine=true \
    actor_rollout_ref.rollout.dtype=bfloat16 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    trainer.nnodes=8 \
    trainer.n_gpus_per_node=8 \
    'trainer.logger=["console"]' \
    trainer.save_freq=20 \
    trainer.project_name=grpo-launch \
    trainer.experiment_name=qwen2.5-7b-h100-x8 \
    "$@"
