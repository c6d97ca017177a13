# Modeled on verl's long-response DAPO-style scripts (dynamic batch size, lengths in variables).
# Planted: the response length grew to 8192 but the token caps stayed at 6144, below one sequence
# of 2048 + 8192 tokens; verl stops at the first update ("max_token_len must be greater than the
# sequence length"). The log-prob cap follows the actor's and is planted too.
set -euo pipefail

MAX_PROMPT=${MAX_PROMPT:-2048}
MAX_RESPONSE=${MAX_RESPONSE:-$((1024 * 8))}
TOKENS_PER_GPU=${TOKENS_PER_GPU:-6144}

DATA="data.train_files=$HOME/data/dapo/train.parquet
  data.val_files=$HOME/data/aime/test.parquet
  data.train_batch_size=256
  data.max_prompt_length=$MAX_PROMPT
  data.max_response_length=$MAX_RESPONSE"

ACTOR="actor_rollout_ref.actor.use_dynamic_bsz=True
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$TOKENS_PER_GPU
  actor_rollout_ref.actor.ppo_mini_batch_size=64
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.use_kl_loss=False
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.model.use_remove_padding=True"

ROLLOUT="actor_rollout_ref.rollout.name=vllm
  actor_rollout_ref.rollout.tensor_model_parallel_size=2
  actor_rollout_ref.rollout.gpu_memory_utilization=0.6
  actor_rollout_ref.rollout.n=8
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
  actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=$TOKENS_PER_GPU"

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    actor_rollout_ref.model.path=Qwen/Qwen3-8B \
    $DATA $ACTOR $ROLLOUT \
    trainer.logger='["console"]' \
    trainer.project_name=long_responses \
    trainer.experiment_name=qwen3_8b_8k \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.total_epochs=1
