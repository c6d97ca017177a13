#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen3-8b_npu.sh and run_qwen2-7b_seq_balance.sh (FSDP,
# variables with defaults), run on 8 NVIDIA GPUs.
# Exercises the script reader: set -euo pipefail, variables with ${VAR:-default} (nested and quoted),
# plain and exported assignments, an if block, single/double/nested quotes, Hydra lists, +/++ overrides,
# a quoted whole override, comments at line ends, a continuation with no space before the backslash,
# values with spaces, and "$@" at the end.
# Expected: clean.
set -xeuo pipefail

export VLLM_ATTENTION_BACKEND=XFORMERS
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1 # not an NCCL_* variable

project_name='GRPO-Qwen3'
exp_name="${project_name}-8B-fsdp"
gen_tp=${GEN_TP:-4}
rollout_mode="async"
rollout_name="vllm" # sglang or vllm
return_raw_chat="True"
if [ "$rollout_name" = "vllm" ]; then
    export VLLM_USE_V1=1
fi

RAY_DATA_HOME=${RAY_DATA_HOME:-"${HOME}/verl"}
MODEL_PATH=${MODEL_PATH:-"${RAY_DATA_HOME}/models/Qwen3-8B"}
CKPTS_DIR=${CKPTS_DIR:-"${RAY_DATA_HOME}/ckpts/${project_name}/${exp_name}"}
gsm8k_train_path=${RAY_DATA_HOME}/data/gsm8k/train.parquet
math_train_path="${RAY_DATA_HOME}/data/math/train.parquet"
TRAIN_FILES="['$gsm8k_train_path', '$math_train_path']"
TEST_FILE=${TEST_FILE:-"${RAY_DATA_HOME}/data/aime-2024.parquet"}

NNODES=${NNODES:-1}
NGPUS=${NGPUS:-8}
train_bsz=${TRAIN_BS:-256}
mini_bsz=64
lr=1e-6
mkdir -p "${CKPTS_DIR}"

python3 -m verl.trainer.main_ppo --config-name='ppo_trainer'\
    algorithm.adv_estimator=grpo \
    data.train_files="${TRAIN_FILES}" \
    data.val_files="${TEST_FILE}" \
    data.return_raw_chat=$return_raw_chat \
    data.train_batch_size=${train_bsz} \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=${MODEL_PATH} \
    actor_rollout_ref.actor.optim.lr=$lr \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.ppo_mini_batch_size="${mini_bsz}" \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.actor.fsdp_config.forward_prefetch=True \
    actor_rollout_ref.ref.fsdp_config.forward_prefetch=True \
    +actor_rollout_ref.model.override_config.attention_dropout=0.0 \
    ++actor_rollout_ref.actor.entropy_from_logits_with_chunking=True \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=${gen_tp} \
    actor_rollout_ref.rollout.name=${rollout_name} \
    actor_rollout_ref.rollout.mode=$rollout_mode \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    'actor_rollout_ref.rollout.val_kwargs.top_p=0.7' \
    "actor_rollout_ref.rollout.val_kwargs.temperature=0.6" \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger=['console','wandb'] \
    trainer.project_name="${project_name}" \
    trainer.experiment_name="${exp_name} (gsm8k + math)" \
    trainer.n_gpus_per_node=${NGPUS} \
    trainer.nnodes=${NNODES} \
    trainer.default_local_dir=${CKPTS_DIR} \
    trainer.resume_mode=auto \
    trainer.val_before_train=True \
    trainer.save_freq=5 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 "$@"
