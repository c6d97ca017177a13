#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen3-8b.sh (GRPO on GSM8K, 1 node x 8 GPUs), with the
# engine switch of the scripts that run both backends: ENGINE and MODEL_SIZE default to megatron
# and 8b; a case statement picks TP / PP by model size and an if / elif / else picks the trainer
# config and the engine's overrides. Both are decided from the defaults (the Megatron branch, TP=2
# PP=2); the other branches (FSDP, unknown sizes that exit) are not read. [[ ]] with && and || sets
# sequence parallelism.
# Expected: clean on a100x8.
set -euo pipefail

ENGINE=${ENGINE:-megatron} # megatron or fsdp
MODEL_SIZE=${MODEL_SIZE:-8b}
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-${MODEL_SIZE^^}}

case $MODEL_SIZE in
    0.6b | 1.7b | 4b) TP=1 PP=1 ;;
    8b) TP=2 PP=2 ;;
    14b | 32b)
        TP=4
        PP=2
        ;;
    *)
        echo "no layout for Qwen3-$MODEL_SIZE" >&2
        exit 1
        ;;
esac

if [ "$ENGINE" = "megatron" ]; then
    export CUDA_DEVICE_MAX_CONNECTIONS=1
    CONFIG_NAME=ppo_megatron_trainer
    ENGINE_ARGS="actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP
        actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP
        actor_rollout_ref.actor.megatron.param_offload=True
        actor_rollout_ref.actor.megatron.grad_offload=True
        actor_rollout_ref.actor.megatron.optimizer_offload=True
        actor_rollout_ref.ref.megatron.tensor_model_parallel_size=$TP
        actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=$PP
        actor_rollout_ref.ref.megatron.param_offload=True"
elif [ "$ENGINE" = "fsdp" ]; then
    CONFIG_NAME=ppo_trainer
    ENGINE_ARGS="actor_rollout_ref.actor.fsdp_config.param_offload=False
        actor_rollout_ref.model.enable_gradient_checkpointing=True
        actor_rollout_ref.ref.fsdp_config.param_offload=True"
else
    echo "ENGINE must be megatron or fsdp, not $ENGINE" >&2
    exit 1
fi

[[ $ENGINE == megatron && $TP -gt 1 ]] && SEQ_PARALLEL=True || SEQ_PARALLEL=False
if [[ $ENGINE == megatron ]]; then
    ENGINE_ARGS+=" actor_rollout_ref.actor.megatron.sequence_parallel=$SEQ_PARALLEL"
fi

python3 -m verl.trainer.main_ppo --config-path=config --config-name="$CONFIG_NAME" \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=512 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=$MODEL_PATH \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    $ENGINE_ARGS \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_example_gsm8k' \
    trainer.experiment_name="qwen3_${MODEL_SIZE}_${ENGINE}" \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 "$@"
