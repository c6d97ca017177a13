#!/usr/bin/env bash
# Modeled on verl examples/grpo_trainer/run_qwen2-7b_math.sh (FSDP, GSM8K + MATH, 1 node x 8 GPUs),
# with settings that depend on the machine the job lands on.
# Planted:
#   - ROLLOUT_TP is 4 or 2 depending on a file on the cluster ([ -f ... ], line 16): the reader
#     reads both branches, ROLLOUT_TP differs between them, and the rollout TP override (line 42)
#     is UNRESOLVED (warning); the checks use verl's default rollout TP (2), which is legal here;
#   - a run directory named after $(date ...) and $(whoami) (lines 21 and 22) in
#     trainer.experiment_name and trainer.default_local_dir (lines 54 and 55): values that are only
#     names, so UNRESOLVED is a note there;
#   - the guard `[ -n "$SLURM_JOB_ID" ] || exit 1` cannot be decided either; its exit branch ends
#     the script, so it changes nothing for the python3 command.
# Expected: UNRESOLVED at lines 42 (warning), 54 and 55 (notes); nothing else.
set -x

if [ -f /etc/verl/use_tp4 ]; then
    ROLLOUT_TP=4
else
    ROLLOUT_TP=2
fi
timestamp=$(date +%Y%m%d_%H%M)
user=$(whoami)

[ -n "$SLURM_JOB_ID" ] || { echo "submit this with sbatch" >&2; exit 1; }

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files="['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']" \
    data.val_files="['$HOME/data/gsm8k/test.parquet', '$HOME/data/math/test.parquet']" \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$ROLLOUT_TP \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    trainer.project_name='verl_grpo_example_gsm8k_math' \
    trainer.experiment_name="qwen2_5_7b_${timestamp}" \
    trainer.default_local_dir="/checkpoints/${user}/qwen2_5_7b_${timestamp}" \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
