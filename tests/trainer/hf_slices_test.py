#!/usr/bin/python3
"""Each rank reads only its slices of a Hugging Face checkpoint (docs/hf-checkpoints.md "Which
rank reads what"), and what it loads is the full load's: scripts/make-tiny-qwen.py writes a tiny
Qwen3 and a tiny Qwen3-MoE (4 experts) with the real 151,936-token vocabulary, bench/hf_load/run.py
loads each on 1 rank and on 2 ranks (TP=2 for the dense one, EP=2 for the MoE one) with no
training step. The SHA-256 of the full weights (gathered from the shards in the one-rank order)
must be the 1-rank load's at every layout, and the bytes each rank copies out of the mapped file
must be exactly those of its tensors, computed here from the safetensors header and the layout
rules (Megatron's TP split of rows/columns and vocabulary; experts 0-1 on rank 0, 2-3 on rank 1).

  hf_slices_test.py GRPO_TRAINER SOURCE_DIR WORK_DIR
"""
import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

trainer, src, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
ROW = re.compile(r"^\| (\d+) \| [\d.]+ MiB \| [\d.]+ MiB \| ([\d,]+) \| ([\d,]+) \| ([0-9a-f]{16}) \|$")


def make(name, *extra):
    subprocess.run(["/usr/bin/python3", str(src / "scripts/make-tiny-qwen.py"), str(work / name),
                    *extra], check=True, stdout=subprocess.DEVNULL)
    return work / name


def header(model):
    raw = (model / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    h = json.loads(raw[8:8 + n])
    h.pop("__metadata__", None)
    return {k: (v["shape"], v["data_offsets"][1] - v["data_offsets"][0]) for k, v in h.items()}


def load(model, world, **layout):
    args = [f"--{k}={v}" for k, v in layout.items()]
    out = subprocess.run(["/usr/bin/python3", str(src / "bench/hf_load/run.py"), trainer,
                          str(model), f"--world={world}", *args],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = (int(m.group(2).replace(",", "")),
                                     int(m.group(3).replace(",", "")), m.group(4))
    assert sorted(rows) == list(range(world)), out.stdout
    print(out.stdout, end="")
    return rows


def tp_share(name, shape, nbytes):
    """Bytes one of 2 TP ranks holds (tensor_parallel.cpp tp_slice: q/k/v, gate/up, o, down,
    embedding and LM head split in two; with 2 KV heads k/v split too; norms whole)."""
    split = any(name.endswith(s) for s in (
        "q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight", "gate_proj.weight",
        "up_proj.weight", "down_proj.weight", "embed_tokens.weight"))
    return nbytes // 2 if split else nbytes


dense = make("dense")
moe = make("moe", "--experts", "4")
for model, layout, share in (
        (dense, {"tp": 2}, lambda r, n, s, b: tp_share(n, s, b)),
        # Experts e of 4 on rank e // 2 (ParallelState::owner_of_expert: contiguous blocks).
        (moe, {"ep": 2}, lambda r, n, s, b: (
            b if ".experts." not in n else (b if int(n.split(".experts.")[1].split(".")[0]) // 2 == r
                                            else 0)))):
    h = header(model)
    total = sum(b for _, b in h.values())
    one = load(model, 1)
    assert one[0][0] == total and one[0][1] == total, (one, total)
    two = load(model, 2, **layout)
    for r in (0, 1):
        want = sum(share(r, n, s, b) for n, (s, b) in h.items())
        read, of, sha = two[r]
        assert of == total, (r, of, total)
        assert read == want, f"{model.name} rank {r}: read {read} bytes, expected {want}"
        assert read < total, (r, read, total)
        assert sha == one[0][2], f"{model.name} rank {r}: weights {sha} != 1-rank {one[0][2]}"
    print(f"{model.name} {layout}: rank bytes {two[0][0]:,} + {two[1][0]:,} of {total:,}; "
          f"weights equal to the 1-rank load")
print("ok")
