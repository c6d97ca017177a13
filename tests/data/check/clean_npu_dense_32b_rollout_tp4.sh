# Modeled on verl examples/gspo_trainer/run_qwen3_32b_gspo_npu.sh (Qwen3-32B, FSDP2 with Ulysses 4,
# dynamic batches, parameter and optimizer offload, vLLM-Ascend rollout at TP 4 and 0.9 of the
# device, 16k + 16k tokens), changed to 2 nodes x 8 Ascend 910B (64 GB) and GRPO.
# Why it is clean: the rollout holds vLLM's 0.9 x 64 GiB (Qwen3-32B at TP 4 is 15.3 GiB of weights;
# the rest is KV cache) and 3 GiB of runtime, 60.6 GiB of 60.8 usable; the actor's state is on the
# host while it generates (verl offloads both before the KV cache resumes).
# Expected: clean.
set -x

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/verl/dataset/dapo-math-17k.parquet \
    data.val_files=$HOME/verl/dataset/aime-2024.parquet \
    data.train_batch_size=128 \
    data.max_prompt_length=16384 \
    data.max_response_length=16384 \
    data.truncation='left' \
    actor_rollout_ref.model.path=Qwen/Qwen3-32B \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.strategy=fsdp2 \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192 \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=4 \
    actor_rollout_ref.actor.entropy_from_logits_with_chunking=True \
    actor_rollout_ref.actor.fsdp_config.param_offload=True \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.9 \
    actor_rollout_ref.rollout.n=16 \
    actor_rollout_ref.rollout.max_model_len=32768 \
    actor_rollout_ref.rollout.max_num_batched_tokens=32768 \
    algorithm.use_kl_in_reward=False \
    trainer.device=npu \
    trainer.logger='["console"]' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=2 \
    trainer.save_freq=20 \
    trainer.test_freq=10 \
    trainer.total_epochs=1 $@
