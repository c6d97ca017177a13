#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2_5_vl-7b.sh (vision-language GRPO on Geometry3K, FSDP
# actor, vLLM rollout) scaled to Qwen3-VL-235B-A22B on 8 nodes x 8 H800 the way verl's large
# recipes scale the rollout: one vLLM replica over four nodes (rollout TP 32, as gen TP in the
# DeepSeek-V3 recipe). Checked with --check-parallel only (the memory of a 235B FSDP actor is not
# what this case is about).
# Planted: rollout TP 32. The language model takes it (64 heads, 4 KV heads replicated, expert FFN
# 1536 and the vocabulary divide by 32), but vLLM splits the vision tower's 16 attention heads over
# the same TP group in its default mm_encoder_tp_mode ("weights"): 16 % 32 != 0.
# Expected: HEADS_NOT_DIVISIBLE at the rollout TP line; nothing else.
set -x
ENGINE=${ENGINE:-vllm}

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/geo3k/train.parquet \
    data.val_files=$HOME/data/geo3k/test.parquet \
    data.train_batch_size=512 \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    data.image_key=images \
    actor_rollout_ref.model.path=Qwen/Qwen3-VL-235B-A22B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.01 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.rollout.name=$ENGINE \
    actor_rollout_ref.rollout.tensor_model_parallel_size=32 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.7 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_geo3k' \
    trainer.experiment_name='qwen3_vl_235b_rollout_tp32' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=8 \
    trainer.total_epochs=15 $@
