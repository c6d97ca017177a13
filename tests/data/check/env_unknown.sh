# Modeled on verl examples/grpo_trainer/run_qwen2-7b.sh (FSDP GRPO on GSM8K, 1 node x 8 GPUs), with the
# NCCL exports of examples/gspo_trainer/test_gspo_3b_math.sh.
# Planted NCCL_* names that NCCL does not have (not in data/schema/nccl_env.txt):
#   NCCL_IBEXT_DISABLE   (copied from verl's own gspo example; read by no NCCL release)
#   NCCL_TIMEOUT         (the timeout is torch's, e.g. actor_rollout_ref.nccl_timeout)
#   NCCL_IB_RETRY_COUNT  (the variable is NCCL_IB_RETRY_CNT)
#   NCCL_COMPRESS        (given as a prefix of the python3 command)
# NCCL_DEBUG and NCCL_NVLS_ENABLE are documented; NCCL_GDRCOPY_ENABLE is read by NCCL's source
# without documentation (marked undocumented: no diagnostic); TORCH_NCCL_* is not an NCCL_* variable.
# Expected: ENV_UNKNOWN (warning) at the four lines; nothing else.
set -x

export NCCL_DEBUG=WARN
export NCCL_IBEXT_DISABLE=1
export NCCL_NVLS_ENABLE=1
export NCCL_TIMEOUT=1800
export NCCL_IB_RETRY_COUNT=7
export NCCL_GDRCOPY_ENABLE=1
export TORCH_NCCL_ASYNC_ERROR_HANDLING=1

NCCL_COMPRESS=1 python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=1024 \
    data.max_prompt_length=512 \
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
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    actor_rollout_ref.nccl_timeout=1800 \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_example_gsm8k' \
    trainer.experiment_name='qwen2_5_7b_function_rm' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
