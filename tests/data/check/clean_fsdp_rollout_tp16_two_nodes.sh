#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen3-8b.sh (FSDP GRPO on GSM8K) scaled up the way
# verl's tuning/70b scripts do it: a larger model over several nodes with a wide vLLM rollout.
# Adapted: Qwen3-32B on 2 nodes x 8 A100-80GB, parameter and optimizer offload, rollout TP 16.
# Why it is legal: one rollout replica spans both nodes; verl (>= 0.6) gives a replica larger than a
# node whole nodes (RolloutReplica: 16 % 8 == 0, nnodes = 2). 64 heads / 16 = 4 and 8 KV heads
# replicated twice; FFN 25600 and the vocabulary divide by 16. 256 prompts x 8 over DP 16.
# Expected: clean.
set -x

NNODES=${NNODES:-2}

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=256 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen3-32B \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=16 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_gsm8k' \
    trainer.experiment_name='qwen3_32b_rollout_tp16' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NNODES \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
