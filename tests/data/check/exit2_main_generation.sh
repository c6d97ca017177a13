# Modeled on verl examples/generation/run_deepseek7b_mutli_node.sh (offline generation with
# verl.trainer.main_generation), adapted to Qwen2.5-7B-Instruct on 2 nodes.
# A verl script with Hydra overrides, but not a GRPO/PPO launch: the module is main_generation, not
# main_ppo (its keys, e.g. rollout.prompt_length, are not in the PPO trainer's schema either).
# Expected: exit code 2 ("no verl.trainer.main_ppo command found"), no diagnostics.
set -x

data_path=$HOME/data/rlhf/gsm8k/test.parquet
save_path=$HOME/data/rlhf/math/qwen2_5_7b_gen_test.parquet
model_path=Qwen/Qwen2.5-7B-Instruct

python3 -m verl.trainer.main_generation \
    trainer.nnodes=2 \
    trainer.n_gpus_per_node=8 \
    data.path=$data_path \
    data.prompt_key=prompt \
    data.n_samples=1 \
    data.output_path=$save_path \
    model.path=$model_path\
    +model.trust_remote_code=True \
    rollout.temperature=1.0 \
    rollout.top_k=50 \
    rollout.top_p=0.7 \
    rollout.prompt_length=2048 \
    rollout.response_length=1024 \
    rollout.tensor_model_parallel_size=8 \
    rollout.gpu_memory_utilization=0.8
