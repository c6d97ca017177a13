# Modeled on verl examples/grpo_trainer/run_qwen3-8b_npu.sh (variables built before the command).
# Planted: the command substitution that builds the experiment name is never closed (the ")" is
# missing), so everything after it, including the python3 command, is swallowed by $( ... ) and the
# file ends inside it.
# Expected: exit code 2 (the script cannot be parsed), no diagnostics.
set -x

project_name='GRPO-Qwen3'
exp_name=$(date +%Y%m%d-%H%M-${project_name}
MODEL_PATH=${MODEL_PATH:-"${HOME}/models/Qwen3-8B"}

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=256 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=${MODEL_PATH} \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    trainer.project_name="${project_name}" \
    trainer.experiment_name="${exp_name}" \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.total_epochs=15
