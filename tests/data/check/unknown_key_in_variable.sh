#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b.sh (FSDP GRPO on GSM8K, 1 node x 8 GPUs), with
# the actor and rollout settings collected in variables passed unquoted, as verl's DAPO recipes do.
# Planted: two misspelt keys inside the variables' values:
#   actor_rollout_ref.actor.kl_loss_coeff   (the key is kl_loss_coef), in ACTOR on line 22;
#   actor_rollout_ref.rollout.temprature    (the key is temperature), in ROLLOUT on line 31.
# The findings point at the lines inside the variables where the keys are written, not at the
# python3 command that expands them.
# Expected: UNKNOWN_KEY at lines 22 and 31; nothing else.
set -x

train_files=$HOME/data/gsm8k/train.parquet
test_files=$HOME/data/gsm8k/test.parquet

ACTOR="actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct
    actor_rollout_ref.model.use_remove_padding=True
    actor_rollout_ref.model.enable_gradient_checkpointing=True
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=256
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coeff=0.001
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.fsdp_config.param_offload=False
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False"

ROLLOUT="actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.tensor_model_parallel_size=4
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    actor_rollout_ref.rollout.temprature=0.9
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$train_files \
    data.val_files=$test_files \
    data.train_batch_size=1024 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    $ACTOR \
    $ROLLOUT \
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
