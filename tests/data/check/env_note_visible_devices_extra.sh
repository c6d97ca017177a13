# Modeled on verl examples/grpo_trainer/run_qwen2_5-3b_gsm8k_grpo_lora.sh (FSDP GRPO on GSM8K), shrunk
# to a one-GPU smoke test of Qwen2.5-0.5B-Instruct on a workstation.
# Planted (a note, not an error): the shell still exports all eight GPUs while the run asks for one,
# trainer.n_gpus_per_node=1. verl asks Ray for one GPU per node (one placement-group bundle), so the
# run uses one device and leaves seven idle; nothing fails.
# Rollout TP 1 (one device), 64 prompts x 4 responses in mini batches of 16, micro batch 4.
# Expected: ENV_CONFLICT as a note (severity info) at the export line; nothing else.
set -x

export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=64 \
    data.max_prompt_length=512 \
    data.max_response_length=512 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.4 \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.logger='["console"]' \
    trainer.project_name='verl_smoke' \
    trainer.experiment_name='qwen2_5_05b_one_gpu' \
    trainer.n_gpus_per_node=1 \
    trainer.nnodes=1 \
    trainer.total_epochs=1 $@
