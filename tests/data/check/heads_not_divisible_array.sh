#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b_seq_balance.sh (FSDP, GSM8K, 1 node x 8 GPUs),
# with the overrides in one bash array built up over several statements and passed as "${ARGS[@]}".
# Planted: rollout tensor_model_parallel_size=8 in an element appended on line 30. Qwen2.5-7B has 28
# attention heads (28 % 8 != 0, which vLLM rejects); its 4 KV heads are fine. The finding points at
# the array element, not at the python3 command.
# Expected: HEADS_NOT_DIVISIBLE at line 30; nothing else.
set -x

ARGS=(algorithm.adv_estimator=grpo)
ARGS+=(data.train_files=$HOME/data/gsm8k/train.parquet data.val_files=$HOME/data/gsm8k/test.parquet)
ARGS+=(data.train_batch_size=1024 data.max_prompt_length=512 data.max_response_length=1024)
ARGS+=(data.filter_overlong_prompts=True data.truncation='error')

ARGS+=(
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct
    actor_rollout_ref.model.use_remove_padding=True
    actor_rollout_ref.model.enable_gradient_checkpointing=True
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=256
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.fsdp_config.param_offload=False
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False
)

# Use the whole node for generation.
ARGS+=(actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size=8)
ARGS+=(actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.rollout.n=5)
ARGS+=(actor_rollout_ref.ref.fsdp_config.param_offload=True algorithm.use_kl_in_reward=False)

ARGS+=(
    trainer.critic_warmup=0
    trainer.logger='["console","wandb"]'
    trainer.project_name='verl_grpo_example_gsm8k'
    trainer.experiment_name='qwen2_5_7b_seq_balance'
    trainer.n_gpus_per_node=8
    trainer.nnodes=1
    trainer.save_freq=20
    trainer.test_freq=5
    trainer.total_epochs=15
)

python3 -m verl.trainer.main_ppo "${ARGS[@]}" "$@"
