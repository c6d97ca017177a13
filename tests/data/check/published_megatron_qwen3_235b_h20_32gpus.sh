# Published as working: verl's Qwen3-235B-A22B Megatron example on 4 nodes x 8 H20 96GB
# (examples/grpo_trainer/run_qwen3-235b_megatron_96gb.sh and the table in docs/perf/dpsk.md:
# 32 GPUs with the CPU optimizer at offload fraction 1.0): TP 4, PP 8 with embedding and loss
# counted in the pipeline split, EP 4, dynamic batch size, all offloads, fused kernels, rollout
# TP 8 at 0.85. Our own script with those settings. Expected: no error.
set -xeuo pipefail

NNODES=${NNODES:-4}
MAX_PROMPT=$((1024 * 2))
MAX_RESPONSE=$((1204 * 8))
MAX_TOKENS=$((MAX_PROMPT + MAX_RESPONSE))
TC=actor_rollout_ref.actor.megatron.override_transformer_config
OPT=actor_rollout_ref.actor.optim.override_optimizer_config

python3 -m verl.trainer.main_ppo --config-path=config \
    --config-name='ppo_megatron_trainer.yaml' \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/dapo/train.parquet \
    data.val_files=$HOME/data/aime/test.parquet \
    data.train_batch_size=32 \
    data.max_prompt_length=$MAX_PROMPT \
    data.max_response_length=$MAX_RESPONSE \
    actor_rollout_ref.model.path=Qwen/Qwen3-235B-A22B \
    actor_rollout_ref.model.use_fused_kernels=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$MAX_TOKENS \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=8 \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=4 \
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \
    actor_rollout_ref.actor.megatron.param_offload=True \
    actor_rollout_ref.actor.megatron.grad_offload=True \
    actor_rollout_ref.actor.megatron.optimizer_offload=True \
    +$TC.account_for_loss_in_pipeline_split=True \
    +$TC.account_for_embedding_in_pipeline_split=True \
    +$OPT.optimizer_offload_fraction=1.0 \
    +$OPT.optimizer_cpu_offload=True \
    +$OPT.overlap_cpu_optimizer_d2h_h2d=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.85 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.enforce_eager=True \
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=$MAX_TOKENS \
    actor_rollout_ref.ref.megatron.param_offload=True \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console"]' \
    trainer.project_name=verl_grpo_qwen3_235b \
    trainer.experiment_name=qwen3_235b_h20_32 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NNODES \
    trainer.save_freq=-1 \
    trainer.test_freq=10 \
    trainer.total_epochs=10
