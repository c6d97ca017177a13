#!/usr/bin/env bash
# The GPU path (ctest label gpu; docs/parallelism.md "GPUs"): tiny-dense at TP=2 on 2 NVIDIA
# GPUs with NCCL through `grpo-launch run -p local-gpu`, against the same layout on 2 CPU ranks
# with Gloo: same seed and data, so every step's loss, reward and gradient norm must agree
# (fp32; 1e-3 relative: the GPUs' reduction order differs from the CPU's).
# Skipped (exit 77, with the reason) without 2 GPUs, or with a grpo-trainer built against a
# LibTorch without c10d NCCL (Debian's CPU LibTorch: every machine but a GPU cluster's).
#   gpu_test.sh GRPO_LAUNCH GRPO_TRAINER SOURCE_DIR
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
launch=$1 trainer=$2 src=$3
skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v nvidia-smi >/dev/null || skip "no nvidia-smi: this machine has no NVIDIA GPU"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
((gpus >= 2)) || skip "needs 2 GPUs, nvidia-smi lists $gpus"
"$trainer" --version | grep -q nccl ||
  skip "$("$trainer" --version): built against a LibTorch without c10d NCCL"
PATH="$(dirname "$trainer"):$PATH"
export PATH OMP_WAIT_POLICY=PASSIVE
unset SLURM_JOB_ID
sets=(--set tp=2 --set trainer.sft_warmup_steps=2 --set trainer.total_training_steps=3
  --set trainer.save_freq=-1 --set trainer.test_freq=-1 --set trainer.val_before_train=false
  --set trainer.threads=1)
for p in local-gpu local-cpu; do
  "$launch" --profile-dir "$src/tests/data/profiles" run -p "$p" -m tiny-dense \
    --run-dir "$TEST_TMP/$p" "${sets[@]}" >"$TEST_TMP/$p.out" 2>&1 ||
    { tail -n 30 "$TEST_TMP/$p.out" >&2; fail "the $p run failed"; }
done
python3 - "$TEST_TMP/local-gpu" "$TEST_TMP/local-cpu" <<'PY' || fail "the GPU run differs from the CPU run"
import json, sys
def load(d):
    ev = [json.loads(l) for l in open(d + "/events.jsonl")]
    start = next(e for e in ev if e["type"] == "start" and e["rank"] == 0)
    steps = {e["step"]: e for e in ev if e["type"] == "step" and e["rank"] == 0}
    lay = next(e for e in ev if e["type"] == "layout")
    return start, steps, lay
gs, gsteps, glay = load(sys.argv[1])
cs, csteps, clay = load(sys.argv[2])
print(f"gpu: backend {gs['backend']} device {gs['device']} TP={glay['tp']}; cpu: backend {cs['backend']}")
ok = gs["backend"] == "nccl" and gs["device"] == "cuda" and glay["tp"] == 2 and clay["tp"] == 2
ok = ok and sorted(gsteps) == sorted(csteps) == [1, 2, 3, 4, 5]
for s in sorted(csteps):
    for k in ("sft_loss", "loss", "reward_mean", "grad_norm"):
        if k not in csteps[s]:
            continue
        g, c = gsteps[s].get(k), csteps[s][k]
        close = g is not None and abs(g - c) <= 1e-3 * max(1.0, abs(c))
        print(f"step {s} {k}: gpu {g} cpu {c}{'' if close else '  <- differs'}")
        ok = ok and close
sys.exit(0 if ok else 1)
PY
echo "ok: TP=2 on 2 GPUs (NCCL) equals TP=2 on 2 CPU ranks (Gloo)"
