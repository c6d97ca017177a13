# Modeled on verl examples/grpo_trainer/run_qwen2_5-7b_math_megatron_diff_tp.sh (Megatron actor TP=2 x
# PP=2 with a reference model, vLLM rollout, GSM8K + MATH, 1 node x 8 A100-80GB).
# A working script with five planted findings, each of a different code (four errors, one warning):
#   1. CUDA_VISIBLE_DEVICES hides GPU 7 (7 devices) but n_gpus_per_node is still 8  -> ENV_CONFLICT
#   2. algorithm.kl_ctrl.kl_coeff (the key is kl_coef)                               -> UNKNOWN_KEY
#   3. ppo_mini_batch_size=384: 1024 prompts are not a whole number of mini batches  -> BATCH_NOT_DIVISIBLE
#   4. rollout TP 8: Qwen2.5-7B's 28 heads do not divide by 8 (its 4 KV heads do)    -> HEADS_NOT_DIVISIBLE
#   5. reference pipeline_model_parallel_size=1 while the actor uses 2 (ignored)     -> TP_MISMATCH (warning)
# Everything else is consistent: 384 is a multiple of DP = 2 and 384 x 5 / 2 = 960 responses per rank
# divide by the micro batch 4; offload keeps memory well inside 80 GB.
# Expected: exactly these five diagnostics, each at its line.
set -x

export CUDA_DEVICE_MAX_CONNECTIONS=1 # For megatron communication/computation overlapping
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 # GPU 7 is flaky

gsm8k_train_path=$HOME/data/gsm8k/train.parquet
gsm8k_test_path=$HOME/data/gsm8k/test.parquet
math_train_path=$HOME/data/math/train.parquet
math_test_path=$HOME/data/math/test.parquet

train_files="['$gsm8k_train_path', '$math_train_path']"
test_files="['$gsm8k_test_path', '$math_test_path']"

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml'\
    algorithm.adv_estimator=grpo \
    algorithm.kl_ctrl.kl_coeff=0.001 \
    data.train_files="$train_files" \
    data.val_files="$test_files" \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    data.truncation='error' \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=384 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.grad_offload=True \
    actor_rollout_ref.actor.megatron.optimizer_offload=True \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=1 \
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.ref.megatron.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name='verl_grpo_example_gsm8k_math' \
    trainer.experiment_name='qwen2_5_7b_megatron' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
