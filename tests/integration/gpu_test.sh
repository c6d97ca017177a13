#!/usr/bin/env bash
# The GPU path (ctest label gpu; docs/parallelism.md "GPUs"): tiny-dense at TP=2 on 2 NVIDIA
# GPUs with NCCL through `grpo-launch run -p local-gpu`, against the same layout on 2 CPU ranks
# with Gloo: same seed and data, so every step's loss, reward and gradient norm must agree
# (fp32; 1e-3 relative: the GPUs' reduction order differs from the CPU's). Then the same in bf16
# (grpo.dtype=bf16: bf16 parameters, fp32 master weights and gradients) on both, within bf16's
# precision: 1% for losses, 10% for gradient norms (tests/trainer/process_layouts_test.cpp
# MixedPrecisionTracksFp32AndResumesBitExact measured what rounding alone changes).
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
compare() { # compare DTYPE LOSS_TOLERANCE GRAD_NORM_TOLERANCE EXTRA_SETS...
  local dtype=$1 tol=$2 gtol=$3
  shift 3
  for p in local-gpu local-cpu; do
    "$launch" --profile-dir "$src/tests/data/profiles" run -p "$p" -m tiny-dense \
      --run-dir "$TEST_TMP/$p-$dtype" "${sets[@]}" "$@" >"$TEST_TMP/$p-$dtype.out" 2>&1 ||
      { tail -n 30 "$TEST_TMP/$p-$dtype.out" >&2; fail "the $p $dtype run failed"; }
  done
  python3 - "$TEST_TMP/local-gpu-$dtype" "$TEST_TMP/local-cpu-$dtype" "$dtype" "$tol" "$gtol" <<'PY' ||
import json, sys
def load(d):
    ev = [json.loads(l) for l in open(d + "/events.jsonl")]
    start = next(e for e in ev if e["type"] == "start" and e["rank"] == 0)
    steps = {e["step"]: e for e in ev if e["type"] == "step" and e["rank"] == 0}
    lay = next(e for e in ev if e["type"] == "layout")
    return start, steps, lay
gs, gsteps, glay = load(sys.argv[1])
cs, csteps, clay = load(sys.argv[2])
dtype, tol, gtol = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
print(f"{dtype} gpu: backend {gs['backend']} device {gs['device']} TP={glay['tp']} "
      f"dtype {glay['dtype']}; cpu: backend {cs['backend']} dtype {clay['dtype']}")
ok = gs["backend"] == "nccl" and gs["device"] == "cuda" and glay["tp"] == 2 and clay["tp"] == 2
ok = ok and glay["dtype"] == clay["dtype"] == dtype
ok = ok and sorted(gsteps) == sorted(csteps) == [1, 2, 3, 4, 5]
for s in sorted(csteps):
    for k in ("sft_loss", "loss", "reward_mean", "grad_norm"):
        if k not in csteps[s]:
            continue
        g, c = gsteps[s].get(k), csteps[s][k]
        t = gtol if k == "grad_norm" else tol
        close = g is not None and abs(g - c) <= t * max(1.0, abs(c))
        print(f"step {s} {k}: gpu {g} cpu {c}{'' if close else '  <- differs'}")
        ok = ok and close
sys.exit(0 if ok else 1)
PY
    fail "the $dtype GPU run differs from the CPU run"
}
compare float32 1e-3 1e-3
compare bfloat16 1e-2 1e-1 --set grpo.dtype=bf16 --set device.bf16=true \
  --set device.peak_bf16_tflops=0.1
echo "ok: TP=2 on 2 GPUs (NCCL) equals TP=2 on 2 CPU ranks (Gloo), in fp32 and in bf16"
