#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b.sh (FSDP GRPO on GSM8K, 1 node x 8 GPUs), with
# the fixed overrides in a function that takes the number of prompts as $1 and passes the other
# arguments through with "$@".
# Planted: the call asks for 512 prompts per step (line 46) with mini batches of 192 (line 48):
# 512 % 192 != 0 (verl's make_iterator asserts on it). 192 is a multiple of DP = 8, and
# 192 x 5 / 8 = 120 responses per rank divide by the micro batch 4. The mini batch override reaches
# the python3 command through "$@", and the finding points at the call's argument where it is
# written (line 48), not at the function.
# Expected: BATCH_NOT_DIVISIBLE at line 48; nothing else.
set -x

train() {
    local prompts=$1
    shift
    python3 -m verl.trainer.main_ppo \
        algorithm.adv_estimator=grpo \
        data.train_files=$HOME/data/gsm8k/train.parquet \
        data.val_files=$HOME/data/gsm8k/test.parquet \
        data.train_batch_size="$prompts" \
        data.max_prompt_length=512 \
        data.max_response_length=1024 \
        data.filter_overlong_prompts=True \
        data.truncation='error' \
        actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
        actor_rollout_ref.actor.optim.lr=1e-6 \
        actor_rollout_ref.model.use_remove_padding=True \
        actor_rollout_ref.actor.use_kl_loss=True \
        actor_rollout_ref.actor.kl_loss_coef=0.001 \
        actor_rollout_ref.actor.kl_loss_type=low_var_kl \
        actor_rollout_ref.actor.entropy_coeff=0 \
        actor_rollout_ref.model.enable_gradient_checkpointing=True \
        actor_rollout_ref.actor.fsdp_config.param_offload=False \
        actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
        actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
        actor_rollout_ref.rollout.n=5 \
        actor_rollout_ref.ref.fsdp_config.param_offload=True \
        algorithm.use_kl_in_reward=False \
        trainer.n_gpus_per_node=8 \
        trainer.nnodes=1 \
        "$@"
}

train 512 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.ppo_mini_batch_size=192 \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_example_gsm8k' \
    trainer.experiment_name='qwen2_5_7b_bigger_mini_batches' \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15
