# Modeled on verl examples/grpo_trainer/run_qwen2-7b_math_megatron.sh (Megatron actor and reference,
# vLLM rollout, 1 node x 8 GPUs), with interleaved pipeline stages (virtual_pipeline_model_parallel_size).
# Adapted: Qwen2.5-7B-Instruct, TP=2 x PP=2 (DP=2), VPP=2 (28 layers: 7 per virtual stage, legal),
# 960 prompts in mini batches of 30, parameter/optimizer offload.
# Planted: ppo_micro_batch_size_per_gpu=3. Each rank gets 30 x 5 / 2 = 75 responses per mini batch,
# 25 micro batches of 3; Megatron-Core's interleaved schedule takes micro batches in groups of
# microbatch_group_size_per_vp_stage (= PP = 2) and raises when 25 % 2 = 1 is left over (0 < 1 < PP).
# 75 % 3 == 0, 960 % 30 == 0 and the responses divide over DP 2, so no other batch rule breaks.
# Expected: BATCH_NOT_DIVISIBLE at the micro batch line; nothing else.
set -x

export CUDA_DEVICE_MAX_CONNECTIONS=1 # Megatron overlaps TP communication with compute

gsm8k_train=$HOME/data/gsm8k/train.parquet
gsm8k_test=$HOME/data/gsm8k/test.parquet

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files="$gsm8k_train" \
    data.val_files="$gsm8k_test" \
    data.train_batch_size=960 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=30 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.optimizer_offload=True \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.megatron.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_gsm8k' \
    trainer.experiment_name='qwen2_5_7b_megatron_vpp2_mb3' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
