#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh (Qwen3-30B-A3B, Megatron with
# expert parallelism, mbridge, offload), on 8 nodes x 8 H800 (profile moe-8node).
# Adapted: TP=2 for the dense part, EP=8, ETP=1, full offload and recompute, dynamic batch sizes.
# Planted: sequence_parallel=False next to TP=2. Megatron-Core 0.15 (verl 0.7's) only warns about
# EP > 1 with TP > 1 and no sequence parallelism at config time, but MoELayer.forward raises ValueError
# in training whenever TP > 1 without sequence parallelism (every core version since 0.12).
# Expected: INVALID_SETTING at the sequence_parallel line; nothing else.
set -x

NNODES=${NNODES:-8}
TRAIN_TP=${TRAIN_TP:-2}
TRAIN_EP=${TRAIN_EP:-8}
INFER_TP=${INFER_TP:-4}
MODEL_PATH=${MODEL_PATH:-"${HOME}/models/Qwen3-30B-A3B"}

python3 -m verl.trainer.main_ppo --config-path=./config --config-name='ppo_megatron_trainer' \
    algorithm.adv_estimator=grpo \
    data.train_files="${HOME}/data/dapo-math-17k.parquet" \
    data.val_files="${HOME}/data/aime-2024.parquet" \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    data.train_batch_size=512 \
    actor_rollout_ref.rollout.n=16 \
    actor_rollout_ref.model.path="${MODEL_PATH}" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=3072 \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.grad_offload=True \
    actor_rollout_ref.actor.megatron.optimizer_offload=True \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${TRAIN_TP} \
    actor_rollout_ref.actor.megatron.sequence_parallel=False \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=${TRAIN_EP} \
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_grouped_gemm=True \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full \
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=${INFER_TP} \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.7 \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=6144 \
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=6144 \
    actor_rollout_ref.ref.megatron.param_offload=True \
    trainer.logger=['console','wandb'] \
    trainer.project_name='grpo-qwen3-30b' \
    trainer.experiment_name='qwen3-30b-tp2-ep8' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes="${NNODES}" \
    trainer.total_epochs=10 $@
