#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b_math.sh (FSDP, GSM8K + MATH, 1 node x 8 GPUs),
# written the way longer verl scripts are: the overrides are collected in variables (multi-line
# double-quoted strings, some with backslash-newlines, which bash removes inside double quotes) and
# passed unquoted, so that bash splits them into words; sizes come from ${VAR:-default} chains and
# an arithmetic default.
# Before the reader split unquoted expansions, the first override of each variable kept the
# newline and was reported as UNKNOWN_KEY.
# Expected: clean on a100x8.
set -euo pipefail

NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-${NGPUS:-8}}
TRAIN_BATCH=${TRAIN_BATCH:-1024}
MINI_BATCH=${MINI_BATCH:-$((TRAIN_BATCH / 4))}
ROLLOUT_TP=${ROLLOUT_TP:-4}
lr=1e-6

gsm8k=$HOME/data/gsm8k
math=$HOME/data/math

DATA_CONFIG="
    data.train_files=['$gsm8k/train.parquet','$math/train.parquet']
    data.val_files=['$gsm8k/test.parquet','$math/test.parquet']
    data.train_batch_size=$TRAIN_BATCH
    data.max_prompt_length=1024
    data.max_response_length=1024
    data.filter_overlong_prompts=True
    data.truncation=error"

ACTOR_CONFIG="
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=$lr \
    actor_rollout_ref.actor.ppo_mini_batch_size=$MINI_BATCH \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False"

ROLLOUT_CONFIG="actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=$ROLLOUT_TP
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8
    actor_rollout_ref.ref.fsdp_config.param_offload=True"

TRAINER_CONFIG="trainer.critic_warmup=0 trainer.logger=['console','wandb']
    trainer.project_name=verl_grpo_example_gsm8k_math
    trainer.experiment_name=qwen2_5_7b_overrides_in_variables
    trainer.n_gpus_per_node=$GPUS_PER_NODE trainer.nnodes=$NNODES
    trainer.save_freq=20 trainer.test_freq=5 trainer.total_epochs=15"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    $DATA_CONFIG \
    $ACTOR_CONFIG \
    $ROLLOUT_CONFIG \
    algorithm.use_kl_in_reward=False \
    $TRAINER_CONFIG "$@"
