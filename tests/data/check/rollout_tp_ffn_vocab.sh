# Modeled on verl examples/grpo_trainer/run_qwen2_5-3b_gsm8k_grpo_lora.sh (FSDP GRPO on GSM8K, small
# model), on a 6-GPU machine with Qwen2.5-1.5B-Instruct.
# Planted: rollout tensor_model_parallel_size=6, one replica over all six GPUs. vLLM accepts the heads
# (12 / 6) and replicates the 2 KV heads 3 times, but its MLP layers split FFN 8960 over TP
# (MergedColumnParallelLinear asserts 8960 % 6 == 0) and its embedding splits the vocabulary padded to
# 64 (151936 % 6 != 0): two engine rules, one finding at one line.
# Expected: INVALID_SETTING at the rollout TP line; nothing else.
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
    actor_rollout_ref.rollout.tensor_model_parallel_size=6 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.logger='["console"]' \
    trainer.project_name='verl_grpo_gsm8k' \
    trainer.experiment_name='qwen2_5_1_5b_rollout_tp6' \
    trainer.n_gpus_per_node=6 \
    trainer.nnodes=1 \
    trainer.total_epochs=15 $@
