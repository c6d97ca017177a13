# Modeled on verl's data preparation steps (examples/data_preprocess/gsm8k.py and math_dataset.py, as
# run in verl's quickstart before examples/grpo_trainer/run_qwen2-7b_math.sh).
# A valid bash script, but not a verl launch script: it never runs verl.trainer.main_ppo. The only
# mention of main_ppo is in a comment, and the model download uses key=value-looking arguments.
# Expected: exit code 2 ("no verl.trainer.main_ppo command found"), no diagnostics.
set -x

export HF_ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}

python3 examples/data_preprocess/gsm8k.py --local_dir $HOME/data/gsm8k
python3 examples/data_preprocess/math_dataset.py --local_dir $HOME/data/math

python3 -c "import transformers; transformers.pipeline('text-generation', model='Qwen/Qwen2.5-7B-Instruct')"
huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir $HOME/models/Qwen2.5-7B-Instruct

# next: bash examples/grpo_trainer/run_qwen2-7b_math.sh
#   (python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=1024 ...)
