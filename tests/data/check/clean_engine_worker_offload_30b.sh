# Modeled on verl examples/sapo_trainer/run_qwen30b_sapo.sh (Qwen3-30B-A3B-Base, FSDP with Ulysses 4,
# dynamic batches, vLLM rollout at TP 4 and 0.8, verl's model-engine worker), changed to optimizer
# offload without parameter offload, a 10,240-token cap, chunked entropy and 1 x 8 A100-80GB.
# The model-engine worker (trainer.use_legacy_worker_impl=disable) moves the actor's model to the
# host after each weight sync whatever param_offload says (verl engine_workers.py
# ActorRolloutRefWorker.update_weights), so the rollout holds vLLM's 0.8 x 80 GiB and 2 GiB of
# runtime: 66.0 GiB of 76.0. Counting the model's 14.2 GiB of fp32 shards, as the legacy worker
# keeps them (oom_legacy_worker_keeps_actor_30b.sh), it was an error.
# Expected: clean.
set -x

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/dapo/train.parquet \
    data.val_files=$HOME/data/aime24/test.parquet \
    data.train_batch_size=128 \
    data.max_prompt_length=2048 \
    data.max_response_length=8192 \
    actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B-Base \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.strategy=fsdp2 \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=10240 \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=4 \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True \
    actor_rollout_ref.actor.entropy_from_logits_with_chunking=True \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.8 \
    actor_rollout_ref.rollout.n=16 \
    algorithm.use_kl_in_reward=False \
    trainer.use_legacy_worker_impl=disable \
    trainer.logger='["console"]' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=10 \
    trainer.total_epochs=10 $@
