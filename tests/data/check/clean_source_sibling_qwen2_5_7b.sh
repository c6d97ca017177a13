#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b_math.sh (FSDP, GSM8K + MATH, 1 node x 8 GPUs),
# split the way teams share settings: the model, data paths, NCCL exports and common trainer
# arguments live in source_common_qwen2_5_7b.bash next to this script, found with the usual
# SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) idiom.
# Expected: clean on a100x8 (the exported NCCL_DEBUG and NCCL_IB_TIMEOUT are documented).
set -xeuo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "${SCRIPT_DIR}/source_common_qwen2_5_7b.bash"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files="$train_files" \
    data.val_files="$test_files" \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    "${COMMON_TRAINER_ARGS[@]}" \
    trainer.experiment_name=qwen2_5_7b_shared_settings \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 "$@"
