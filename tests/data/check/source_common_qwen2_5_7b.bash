# Sourced by clean_source_sibling_qwen2_5_7b.sh (not a .sh file, so the corpus test does not run it
# on its own): the settings shared by several launch scripts, as verl users keep them in a
# common.sh next to their run scripts.
export VLLM_ATTENTION_BACKEND=XFORMERS
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_IB_TIMEOUT=22

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2.5-7B-Instruct}
DATA_DIR=${DATA_DIR:-$HOME/data}
train_files="['$DATA_DIR/gsm8k/train.parquet', '$DATA_DIR/math/train.parquet']"
test_files="['$DATA_DIR/gsm8k/test.parquet', '$DATA_DIR/math/test.parquet']"

# Trainer settings every run uses.
COMMON_TRAINER_ARGS=(
    trainer.critic_warmup=0
    'trainer.logger=["console","wandb"]'
    trainer.project_name=verl_grpo_example_gsm8k_math
    trainer.save_freq=20
    trainer.test_freq=5
    trainer.total_epochs=15
)
