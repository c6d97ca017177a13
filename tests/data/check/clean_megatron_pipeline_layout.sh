# Modeled on verl examples/grpo_trainer/run_qwen2-7b_math_megatron.sh (Megatron actor and reference,
# vLLM rollout, 1 node x 8 GPUs), with Megatron-Core's pipeline_model_parallel_layout passed through
# override_transformer_config (not a verl key; it goes to TransformerConfig as written).
# Adapted: Qwen2.5-7B-Instruct, TP=2 x PP=2 (DP=2), parameter/optimizer offload. The layout
# "Et*6|t*7|t*8|t*7L" has 4 stages = PP 2 x VPP 2 (so VPP is set to 2 as well), the embedding first,
# the loss last, and 6 + 7 + 8 + 7 = 28 decoder layers: rank 0 holds 6 + 8, rank 1 holds 7 + 7.
# Expected: clean.
set -x

export CUDA_DEVICE_MAX_CONNECTIONS=1 # Megatron overlaps TP communication with compute

gsm8k_train=$HOME/data/gsm8k/train.parquet
gsm8k_test=$HOME/data/gsm8k/test.parquet

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files="$gsm8k_train" \
    data.val_files="$gsm8k_test" \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.pipeline_model_parallel_layout='"Et*6|t*7|t*8|t*7L"' \
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
    trainer.experiment_name='qwen2_5_7b_megatron_pp_layout' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
