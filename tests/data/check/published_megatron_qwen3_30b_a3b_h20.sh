# Published as working: verl's Qwen3-30B-A3B Megatron example "tested in NNODES=1~4 * 96G H20 GPU"
# (examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh): TP 1, EP 8, dynamic batch size with
# a 2048 + 8192 token cap, parameter/gradient/optimizer offload, the CPU optimizer at fraction 1,
# rollout TP 4 at 0.7. Our own script with those settings on one node of 8 x H20 96GB.
# Expected: no error.
set -xeuo pipefail

NNODES=${NNODES:-1}
MAX_PROMPT=$((1024 * 2))
MAX_RESPONSE=$((1024 * 8))
MAX_TOKENS=$(((MAX_PROMPT + MAX_RESPONSE) * 1))
OFFLOAD=${OFFLOAD:-True}

ACTOR="actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1
  actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1
  actor_rollout_ref.actor.megatron.expert_model_parallel_size=8
  actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1
  actor_rollout_ref.actor.megatron.param_offload=$OFFLOAD
  actor_rollout_ref.actor.megatron.grad_offload=$OFFLOAD
  actor_rollout_ref.actor.megatron.optimizer_offload=$OFFLOAD
  +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=1.
  +actor_rollout_ref.actor.optim.override_optimizer_config.overlap_cpu_optimizer_d2h_h2d=True
  +actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer=True
  +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True
  actor_rollout_ref.actor.use_dynamic_bsz=True
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$MAX_TOKENS
  actor_rollout_ref.actor.ppo_mini_batch_size=128
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2
  actor_rollout_ref.actor.use_kl_loss=False"

ROLLOUT="actor_rollout_ref.rollout.name=vllm
  actor_rollout_ref.rollout.tensor_model_parallel_size=4
  actor_rollout_ref.rollout.gpu_memory_utilization=0.7
  actor_rollout_ref.rollout.n=16
  actor_rollout_ref.rollout.enforce_eager=True
  actor_rollout_ref.rollout.free_cache_engine=True
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
  actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=$MAX_TOKENS"

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/dapo/train.parquet \
    data.val_files=$HOME/data/aime/test.parquet \
    data.train_batch_size=512 \
    data.max_prompt_length=$MAX_PROMPT \
    data.max_response_length=$MAX_RESPONSE \
    actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B-Base \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    $ACTOR $ROLLOUT \
    actor_rollout_ref.ref.megatron.param_offload=$OFFLOAD \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console"]' \
    trainer.project_name=verl_grpo_qwen3_moe \
    trainer.experiment_name=qwen3_30b_a3b_h20 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NNODES \
    trainer.save_freq=-1 \
    trainer.test_freq=10 \
    trainer.total_epochs=10
