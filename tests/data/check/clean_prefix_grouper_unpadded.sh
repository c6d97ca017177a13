# Modeled on verl examples/prefix_grouper/run_qwen3_prefix_grouper.sh (FSDP, vLLM rollout, the
# prefix grouper without remove_padding, as verl requires), changed to Qwen2.5-7B-Instruct, 1,024-token
# prompts, 2,048-token responses, n = 8, mini batch 128 and micro batch 8, on 1 node x 8 A100-80GB.
# The grouper puts each prompt once and then its responses in one row (verl
# trainer/ppo/prefix_grouper_utils.py): a micro batch of 8 rows is one prompt's 8 responses,
# 1,024 + 8 x 2,048 = 17,408 tokens, not 8 padded rows of 3,072 = 24,576, and its floor is one short
# row. Counting the padded rows (before #31) gave a 77.2 GiB floor of 76.0 GiB usable: a false alarm.
# Expected: clean.
set -x

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/math/train.parquet \
    data.val_files=$HOME/data/math/test.parquet \
    data.train_batch_size=512 \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.model.use_remove_padding=False \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=128 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.actor.use_prefix_grouper=True \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    trainer.balance_batch=True \
    trainer.logger='["console"]' \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 $@
