#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh (Qwen3-30B-A3B, Megatron
# expert parallelism, mbridge, full offload), on 8 nodes x 8 H800 (profile moe-8node).
# Planted keys that do not exist:
#   actor_rollout_ref.actor.megatron.gradient_compression=True   (no such verl Megatron option)
#   +...override_transformer_config.moe_router_load_balance=aux_loss
#        (not a TransformerConfig field; the field is moe_router_load_balancing_type)
#   +...override_transformer_config.moe_aux_loss_coef=0.001  (the field is moe_aux_loss_coeff)
# The other override_transformer_config keys are real TransformerConfig fields; the '+' prefix does
# not make an unknown key acceptable.
# Expected: UNKNOWN_KEY at each of those three lines; nothing else.
set -x

NNODES=${NNODES:-8}
NGPUS_PER_NODES=${NGPUS_PER_NODES:-8}

MODEL_PATH=${MODEL_PATH:-"${HOME}/models/Qwen3-30B-A3B"}
RAY_DATA_HOME=${RAY_DATA_HOME:-"${HOME}/verl"}
TRAIN_FILE=$RAY_DATA_HOME/dataset/dapo-math-17k.parquet
TEST_FILE=$RAY_DATA_HOME/dataset/aime-2024.parquet

offload=True

python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer'\
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files="${TRAIN_FILE}" \
    data.val_files="${TEST_FILE}" \
    data.prompt_key=prompt \
    data.truncation='left' \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    data.train_batch_size=512 \
    actor_rollout_ref.rollout.n=16 \
    actor_rollout_ref.model.path="${MODEL_PATH}" \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.optim.weight_decay=0.1 \
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True \
    actor_rollout_ref.actor.megatron.use_mbridge=True \
    actor_rollout_ref.actor.megatron.param_offload=${offload} \
    actor_rollout_ref.actor.megatron.grad_offload=${offload} \
    actor_rollout_ref.actor.megatron.optimizer_offload=${offload} \
    actor_rollout_ref.actor.megatron.gradient_compression=True \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1 \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=8 \
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_grouped_gemm=True \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_permute_fusion=True \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_load_balance=aux_loss \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_aux_loss_coef=0.001 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_token_dispatcher_type="alltoall" \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1 \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.7 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.enforce_eager=True \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.ref.megatron.param_offload=${offload} \
    trainer.logger=['console','wandb'] \
    trainer.project_name='DAPO-Qwen3-30b-MATH' \
    trainer.experiment_name='qwen3-30b-a3b-megatron' \
    trainer.n_gpus_per_node="${NGPUS_PER_NODES}" \
    trainer.nnodes="${NNODES}" \
    trainer.val_before_train=False \
    trainer.test_freq=10 \
    trainer.save_freq=100 \
    trainer.total_epochs=10
