# Modeled on verl examples/grpo_trainer/run_qwen2_5-3b_gsm8k_grpo_lora.sh (FSDP GRPO on GSM8K, small
# model), on a 6-GPU machine with Qwen2.5-1.5B-Instruct.
# Adapted: 96 prompts x 5 responses per step, mini batches of 24 prompts (120 responses, 20 per rank
# of 6), micro batch 2, vLLM rollout TP 2 (12 heads, 2 KV heads, FFN 8960 and vocabulary 151936 all
# divide by 2).
# Expected: clean.
set -x

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=96 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=3e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=24 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.logger='["console"]' \
    trainer.project_name='verl_grpo_gsm8k' \
    trainer.experiment_name='qwen2_5_1_5b_six_gpus' \
    trainer.n_gpus_per_node=6 \
    trainer.nnodes=1 \
    trainer.total_epochs=15 $@
