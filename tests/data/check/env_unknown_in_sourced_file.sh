#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b.sh (FSDP GRPO on GSM8K, 1 node x 8 GPUs), with
# the cluster's NCCL settings and the rollout overrides kept in env_unknown_in_sourced_file.bash,
# sourced from the script's own directory.
# Planted, both in the sourced file (findings are reported there, as FILE:LINE in .expected):
#   - NCCL_IB_TIMEOUTS (line 5; NCCL reads NCCL_IB_TIMEOUT): ENV_UNKNOWN;
#   - actor_rollout_ref.rollout.gpu_memory_utilisation (line 10, British spelling; the key is
#     gpu_memory_utilization) inside ROLLOUT_ARGS, expanded unquoted here: UNKNOWN_KEY. verl's
#     default utilization (0.5) is used for the checks instead and still fits.
# Expected: ENV_UNKNOWN at env_unknown_in_sourced_file.bash:5, UNKNOWN_KEY at
# env_unknown_in_sourced_file.bash:10; nothing else.
set -x

. "$(dirname "$0")/env_unknown_in_sourced_file.bash"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=1024 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
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
    $ROLLOUT_ARGS \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_example_gsm8k' \
    trainer.experiment_name='qwen2_5_7b_function_rm' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
