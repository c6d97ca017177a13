#!/usr/bin/python3
"""Llama, Mistral and Mixtral trained under `grpo-launch run -p local-cpu` (issue 32, docs/hf-checkpoints.md).

  hf_families_test.py LAUNCH_EXE TRAINER_EXE WORK_DIR

For each family, hf_reference.py writes a tiny random checkpoint in the family's own format
(Mixtral's block_sparse_moe.experts.N.w1/w2/w3 names included), and `grpo-launch run -p local-cpu`
trains it 2 SFT + 2 GRPO steps at a sharded layout: Llama and Mistral on 2 ranks at TP=2 (each rank
holds half of every projection), Mixtral on 4 ranks at TP=2 x EP=2 (each rank holds half of every
attention projection and 2 of the 4 experts of every layer; DP=2, the expert-data-parallel group
2), with --export-hf. Checked:

1. The trainer ran the layout asked for on every rank (its `layout` events) and every step (rank
   0's `step` events 1-4).
2. Step 1's SFT loss equals the loss of the same run at plain data parallelism on 2 ranks (DP=2,
   every rank holding the whole model) within 1e-5: the sharded layout computes the same model.
3. The export in <run>/hf names exactly the tensors hf_reference.py's parameter_shapes lists for
   the family (written from transformers' modeling_<family>.py, not from our C++), keeps the
   original config.json, holds weights that training changed, and hf_reference.py's float64 forward
   on it gives grpo-trainer forward's logits within 1e-5.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf_export_test as hx  # noqa: E402
import hf_reference as ref  # noqa: E402

# (hf_reference case, the layout asked for, the trainer's layout event fields that show it); the
# world size is the layout event's world_size (local-cpu has 2 ranks unless gpus_per_node is set).
FAMILIES = [
    ("llama-untied-bf16", ["tp=2"], {"world_size": 2, "tp": 2, "dp": 1, "ep": 1}),
    ("mistral-window", ["tp=2"], {"world_size": 2, "tp": 2, "dp": 1, "ep": 1}),
    ("mixtral-sharded", ["gpus_per_node=4", "tp=2", "ep=2"],
     {"world_size": 4, "tp": 2, "dp": 2, "ep": 2, "edp": 2, "experts_per_rank": 2}),
]
# hf_reference.py's few SFT + GRPO steps, with 2 GRPO steps instead of 3 (the later --set wins).
SETTINGS = ref.TRAIN_SETTINGS + ["--set", "trainer.total_training_steps=2"]
report = hx.report  # one list of failures, hx.FAILED


def run(launch, model_dir, run_dir, layout):
    """`grpo-launch run -p local-cpu` with --export-hf; the trainer's events, or None."""
    args = [launch, "run", "-p", "local-cpu", "-m", str(model_dir), "--run-dir", str(run_dir),
            "--export-hf"] + [a for kv in layout for a in ("--set", kv)] + SETTINGS
    env = dict(os.environ, PATH=f"{Path(sys.argv[2]).parent}:{os.environ['PATH']}",
               OMP_WAIT_POLICY="PASSIVE")
    env.pop("SLURM_JOB_ID", None)
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        print(f"{' '.join(args)}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return None
    return [json.loads(l) for l in (run_dir / "events.jsonl").read_text().splitlines() if l]


def check_family(launch, trainer, work, case, layout, expect):
    base = (Path(work) / case).resolve()
    shutil.rmtree(base, ignore_errors=True)
    original = ref.write_case(case, base / "model")
    config = ref.CASES[case]["config"]
    events = run(launch, base / "model", base / "run", layout)
    if not report(events is not None, f"{case}: run -p local-cpu --set {' '.join(layout)}"):
        return
    layouts = [e for e in events if e.get("type") == "layout"]
    report(sorted(e.get("rank") for e in layouts) == list(range(expect["world_size"])) and
           all(all(e.get(k) == v for k, v in expect.items()) for e in layouts),
           f"{case}: every rank ran {expect}")
    steps = [e for e in events if e.get("type") == "step" and e.get("rank") == 0]
    report([e["step"] for e in steps] == [1, 2, 3, 4], f"{case}: steps 1-4 on rank 0")
    plain = run(launch, base / "model", base / "run-dp", ["tp=1", "ep=1", "dp=2"])
    plain_steps = [e for e in plain or [] if e.get("type") == "step" and e.get("rank") == 0]
    if report(bool(steps) and bool(plain_steps), f"{case}: the DP=2 run"):
        a, b = steps[0]["sft_loss"], plain_steps[0]["sft_loss"]
        report(abs(a - b) <= ref.TOLERANCE,
               f"{case}: step 1 sft_loss {a:.7f} at {' '.join(layout)}, {b:.7f} at DP=2")

    hf = base / "run" / "hf"
    exported = hx.read_model_dir(hf)
    want = ref.parameter_shapes(config)
    report(set(exported) == set(want) and all(exported[k][1] == want[k] for k in want),
           f"{case}: the export names the family's {len(want)} tensors with their shapes")
    written = json.loads((hf / "config.json").read_text())
    report({k: v for k, v in written.items() if k != "torch_dtype"} ==
           {k: v for k, v in config.items() if k != "torch_dtype"},
           f"{case}: config.json is the original's")
    weights = {k: hx.to_torch(t) for k, t in exported.items()}
    report(any(not torch.equal(weights[k].float(), original[k].float()) for k in want),
           f"{case}: training changed the weights")
    got = hx.forward(trainer, hf)
    if not report(got is not None, f"{case}: grpo-trainer forward on the export"):
        return
    expect_logits = ref.reference_logits(config, weights, ref.IDS)
    diff = (torch.tensor(got, dtype=torch.float64) - expect_logits).abs().max().item()
    report(diff <= ref.TOLERANCE,
           f"{case}: hf_reference forward vs grpo-trainer forward on the export: max |diff| "
           f"{diff:.2e}")


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    launch, trainer, work = argv[1], argv[2], argv[3]
    for case, layout, expect in FAMILIES:
        check_family(launch, trainer, work, case, layout, expect)
    if hx.FAILED:
        print(f"{len(hx.FAILED)} failed: " + "; ".join(hx.FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
