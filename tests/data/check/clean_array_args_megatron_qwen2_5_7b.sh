#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2_5-7b_math_megatron_diff_tp.sh (Megatron actor
# TP=2 x PP=2, vLLM rollout TP=4, 1 node x 8 GPUs), written with bash arrays as verl's newer recipes
# are: one array per component, comments between elements, one extended with +=, elements with
# spaces in quoted values, and every array passed as "${array[@]}" (one word per element).
# Expected: clean on a100x8.
set -xeuo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1 # Megatron overlaps communication with computation

TP=2
PP=2
offload=True
train_files="['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']"
test_files="['$HOME/data/gsm8k/test.parquet', '$HOME/data/math/test.parquet']"

data_args=(
    data.train_files="$train_files" # a space in the value: still one element
    data.val_files="$test_files"
    data.train_batch_size=1024
    data.max_prompt_length=1024
    data.max_response_length=1024
    data.filter_overlong_prompts=True
    data.truncation='error'
)

actor_args=(
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=256
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP
)
# Offload parameters, gradients and optimizer state between the phases.
actor_args+=(
    actor_rollout_ref.actor.megatron.param_offload=$offload
    actor_rollout_ref.actor.megatron.grad_offload=$offload
    actor_rollout_ref.actor.megatron.optimizer_offload=$offload
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.001
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
)

ref_args=(
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=$PP
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=$TP
    actor_rollout_ref.ref.megatron.param_offload=$offload
)

rollout_args=(
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.mode=async
    actor_rollout_ref.rollout.tensor_model_parallel_size=4
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4
)

trainer_args=(
    trainer.critic_warmup=0
    'trainer.logger=["console","wandb"]'
    trainer.project_name=verl_grpo_example_gsm8k_math
    trainer.experiment_name="qwen2_5_7b megatron tp${TP} pp${PP}"
    trainer.n_gpus_per_node=8
    trainer.nnodes=1
    trainer.save_freq=20
    trainer.test_freq=5
    trainer.total_epochs=15
)

python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    "${data_args[@]}" \
    "${actor_args[@]}" \
    "${ref_args[@]}" \
    "${rollout_args[@]}" \
    "${trainer_args[@]}" "$@"
