#!/usr/bin/python3
"""`grpo-launch export` end to end (docs/hf-checkpoints.md "Export"), with independent oracles.

  hf_export_test.py LAUNCH_EXE TRAINER_EXE WORK_DIR

1. Round trip, bit-identical: hf_reference.py writes a Hugging Face directory (Qwen2 untied,
   Qwen3 tied, Qwen3-MoE in two shards, Llama tied, Mistral, Mixtral in two shards with its own
   tensor names); grpo-trainer loads it and writes a checkpoint after one
   SFT step at learning rate 1e-30 (an AdamW step of ~1e-30 leaves every fp32 weight of these
   sizes unchanged; the test checks it); `grpo-launch export --dtype fp32` writes it out again.
   Every tensor of the export must be byte-equal to the original file's (read here with struct +
   json, not with our C++), the export must hold no other tensor, config.json, the tokenizer
   files and generation_config.json must come across (only torch_dtype set), and
   `grpo-trainer forward` on both directories must print identical logits.
2. Trained at 2 ranks: the Qwen3-MoE directory is trained a few SFT + GRPO steps on 2 ranks with
   the experts split over them (EP=2; torchrun variables), and its newest checkpoint exported in
   fp32, bf16 and fp16. fp32: every tensor byte-equal to the checkpoint's model.safetensors, and
   weights that training changed. bf16, fp16: every tensor equal to torch's own rounding
   (`.to(torch.bfloat16)`, `.to(torch.float16)`) of the checkpoint's tensor. All: hf_reference.py's float64 forward (written from the
   published architecture) on the exported files gives grpo-trainer's logits within 1e-5.
3. Built-in models (no model directory): a 1-step tiny-dense run exports a generated config.json
   (Qwen3ForCausalLM) that grpo-trainer forward loads and hf_reference.py's forward agrees with
   (1e-5); tiny-moe (q/k norms + a gated shared expert) exports as Qwen2MoeForCausalLM with a
   warning that transformers cannot hold it exactly; both byte-equal to the checkpoint in fp32.
4. Bad input: a missing run directory, a run without checkpoints, a checkpoint whose file does not
   match its manifest (a newer torn checkpoint is skipped with a warning, as --resume auto
   skips it), a --step that does not exist, an output directory that is not empty: each
   one line on stderr and the documented exit code (docs/exit-codes.md), and nothing written.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hf_reference as ref  # noqa: E402

IDS = ref.IDS
FAILED = []


def report(ok, what):
    print(f"{what} {'ok' if ok else 'FAIL'}")
    if not ok:
        FAILED.append(what)
    return ok


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of one file (the layout: u64 length, JSON, data)."""
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def read_model_dir(d):
    """Every tensor of a Hugging Face directory: model.safetensors or the index and its shards."""
    d = Path(d)
    index = d / "model.safetensors.index.json"
    if not index.exists():
        return read_safetensors(d / "model.safetensors")
    weight_map = json.loads(index.read_text())["weight_map"]
    out = {}
    for shard in sorted(set(weight_map.values())):
        part = read_safetensors(d / shard)
        for name, t in part.items():
            if weight_map.get(name) != shard:
                raise ValueError(f"{shard}: {name} is not mapped to this shard")
            out[name] = t
    if set(out) != set(weight_map):
        raise ValueError("weight_map and the shards disagree")
    return out


def to_torch(t):
    dtype, shape, raw = t
    torch_dtype = ref.TORCH_DTYPES[dtype]
    if torch_dtype == torch.float32:
        return torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(shape).clone()
    return torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch_dtype).reshape(shape)


def forward(trainer, model_dir):
    run = subprocess.run([trainer, "forward", "--model", str(model_dir), "--ids",
                          ",".join(map(str, IDS))], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"forward {model_dir}: exit {run.returncode}: {run.stderr.strip()}")
        return None
    return json.loads(run.stdout)["logits"]


def export(launch, run_dir, out, *extra):
    return subprocess.run([launch, "export", str(run_dir), "-o", str(out)] + list(extra),
                          capture_output=True, text=True)


def train_one_rank_unchanged(trainer, model_dir, run_dir, steps=1):
    """`steps` SFT steps at learning rate 1e-30, a checkpoint after each."""
    args = [trainer, "--model", str(model_dir), "--run-dir", str(run_dir), "--resume", "none",
            "--log-level", "error"] + ref.TRAIN_SETTINGS + [
            "--set", "trainer.total_training_steps=0", "--set", f"trainer.sft_warmup_steps={steps}",
            "--set", "trainer.save_freq=1", "--set", "trainer.max_ckpt_to_keep=5",
            "--set", "trainer.sft_lr=1e-30", "--set", "actor_rollout_ref.actor.optim.weight_decay=0"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stderr[-2000:])
    return run.returncode == 0


def trainer_name(hf_name):
    """MixtralSparseMoeBlock's block_sparse_moe / experts.N.w1, w2, w3 as grpo-trainer's mlp /
    experts.N.gate_proj, down_proj, up_proj (modeling_mixtral.py MixtralBlockSparseTop2MLP:
    w2(silu(w1 x) * w3 x)); every other name is the same."""
    if ".block_sparse_moe." not in hf_name:
        return hf_name
    out = hf_name.replace(".block_sparse_moe.", ".mlp.")
    for theirs, mine in ((".w1.", ".gate_proj."), (".w2.", ".down_proj."), (".w3.", ".up_proj.")):
        out = out.replace(theirs, mine)
    return out


def check_round_trip(launch, trainer, work):
    for case in ("qwen2-untied", "qwen3-tied", "qwen3moe-sharded", "llama-tied", "mistral-window",
                 "mixtral-sharded"):
        base = (Path(work) / "round-trip" / case).resolve()
        shutil.rmtree(base, ignore_errors=True)
        model_dir = base / "model"
        ref.write_case(case, model_dir)
        extras = {}
        if case == "qwen3-tied":  # files besides the weights are copied unchanged
            extras = {"tokenizer.json": '{"version": "1.0", "model": {"type": "BPE"}}\n',
                      "tokenizer_config.json": '{"eos_token": "<|im_end|>"}\n',
                      "generation_config.json": '{"eos_token_id": [7, 8], "top_p": 0.8}\n'}
            for name, text in extras.items():
                (model_dir / name).write_text(text)
        if not report(train_one_rank_unchanged(trainer, model_dir, base / "run"),
                      f"{case}: grpo-trainer loads it and writes a checkpoint"):
            continue
        ckpt = read_safetensors(base / "run" / "checkpoints" / "step_00000001" /
                                "model.safetensors")
        original = read_model_dir(model_dir)
        # grpo-trainer's checkpoints name Mixtral's modules as its Qwen3-MoE blocks
        # (docs/checkpoint-format.md); the export gives them Mixtral's names back.
        ours = {trainer_name(k): t for k, t in original.items()}
        report(all(ckpt[k][2] == ours[k][2] for k in ours) and set(ckpt) == set(ours),
               f"{case}: the checkpoint holds the original bytes (learning rate 1e-30)")
        run = export(launch, base / "run", base / "export", "--dtype", "fp32")
        if not report(run.returncode == 0, f"{case}: export exit {run.returncode} "
                      f"{run.stderr.strip()} {run.stdout.strip()}"):
            continue
        exported = read_model_dir(base / "export")
        same = set(exported) == set(original) and all(
            exported[k][0] == "F32" and exported[k][1] == original[k][1] and
            exported[k][2] == original[k][2] for k in original)
        report(same, f"{case}: {len(exported)} exported tensors byte-equal to the original "
               f"{len(original)}")
        config = json.loads((base / "export" / "config.json").read_text())
        report(config["torch_dtype"] == "float32" and
               {k: v for k, v in config.items() if k != "torch_dtype"} ==
               {k: v for k, v in ref.CASES[case]["config"].items() if k != "torch_dtype"},
               f"{case}: config.json is the original's with torch_dtype float32")
        if extras:
            report(all((base / "export" / n).read_text() == t for n, t in extras.items()),
                   f"{case}: {', '.join(extras)} copied unchanged")
        a, b = forward(trainer, model_dir), forward(trainer, base / "export")
        report(a is not None and a == b, f"{case}: grpo-trainer forward: identical logits")


def train_two_ranks(trainer, model_dir, run_dir):
    port = ref.free_port()
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.pop("PMIX_NAMESPACE", None)
        args = [trainer, "--model", str(model_dir), "--run-dir", str(run_dir), "--resume", "none",
                "--log-level", "error"] + ref.TRAIN_SETTINGS + [
                "--set", "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2"]
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    if any(p.returncode != 0 for p in procs):
        print(f"2 ranks: exits {[p.returncode for p in procs]}: {outs[0][1][-2000:]}")
        return False
    return True


def check_two_ranks(launch, trainer, work):
    case = "qwen3moe-sharded"
    base = (Path(work) / "two-ranks").resolve()
    shutil.rmtree(base, ignore_errors=True)
    ref.write_case(case, base / "model")
    if not report(train_two_ranks(trainer, base / "model", base / "run"),
                  "2 ranks (EP=2): 2 SFT + 3 GRPO steps"):
        return
    latest = (base / "run" / "checkpoints" / "latest").read_text().strip()
    ckpt = read_safetensors(base / "run" / "checkpoints" / latest / "model.safetensors")
    original = read_model_dir(base / "model")
    report(any(ckpt[k][2] != original[k][2] for k in original),
           f"{latest}: training changed the weights")
    config = ref.CASES[case]["config"]
    for dtype, flag in (("F32", "fp32"), ("BF16", "bf16"), ("F16", "fp16")):
        out = base / f"export-{flag}"
        run = export(launch, base / "run", out, "--dtype", flag, "--max-shard-size", "40KB")
        if not report(run.returncode == 0, f"export --dtype {flag}: exit {run.returncode} "
                      f"{run.stderr.strip()} {run.stdout.strip()}"):
            continue
        exported = read_model_dir(out)
        shards = json.loads((out / "model.safetensors.index.json").read_text())
        report(len(set(shards["weight_map"].values())) > 1 and
               shards["metadata"]["total_size"] == sum(len(t[2]) for t in exported.values()),
               f"{flag}: {len(set(shards['weight_map'].values()))} shards, total_size "
               f"{shards['metadata']['total_size']}")
        if dtype == "F32":
            ok = set(exported) == set(ckpt) and all(exported[k][2] == ckpt[k][2] for k in ckpt)
            report(ok, f"fp32: {len(exported)} tensors byte-equal to {latest}/model.safetensors")
        else:
            torch_dtype = ref.TORCH_DTYPES[dtype]
            ok = set(exported) == set(ckpt) and all(
                exported[k][0] == dtype and
                torch.equal(to_torch(exported[k]).view(torch.int16),
                            to_torch(ckpt[k]).to(torch_dtype).view(torch.int16))
                for k in ckpt)
            report(ok, f"{flag}: {len(exported)} tensors equal to torch's fp32 -> {flag} rounding")
        got = forward(trainer, out)
        weights = {k: to_torch(t) for k, t in exported.items()}
        want = ref.reference_logits(json.loads((out / "config.json").read_text()), weights, IDS)
        if got is None:
            report(False, f"{flag}: grpo-trainer forward on the export")
            continue
        diff = (torch.tensor(got, dtype=torch.float64) - want).abs().max().item()
        report(diff <= ref.TOLERANCE and list(want.shape) == [len(IDS), config["vocab_size"]],
               f"{flag}: hf_reference forward vs grpo-trainer forward on the export: "
               f"max |diff| {diff:.2e}")


def check_builtin(launch, trainer, work):
    ids = [3, 17, 0, 42, 5, 5, 61, 23, 11]  # tiny models have 64 tokens
    for name, arch in (("tiny-dense", "Qwen3ForCausalLM"), ("tiny-moe", "Qwen2MoeForCausalLM")):
        base = (Path(work) / "builtin" / name).resolve()
        shutil.rmtree(base, ignore_errors=True)
        if not report(train_one_rank_unchanged(trainer, name, base / "run"),
                      f"{name}: a 1-step run writes a checkpoint"):
            continue
        run = export(launch, base / "run", base / "export", "--dtype", "fp32")
        warned = "transformers cannot hold this model exactly" in run.stderr
        if not report(run.returncode == 0 and warned == (name == "tiny-moe"),
                      f"{name}: export exit {run.returncode}, caveat warning: {warned}"):
            continue
        config = json.loads((base / "export" / "config.json").read_text())
        ckpt = read_safetensors(base / "run" / "checkpoints" / "step_00000001" /
                                "model.safetensors")
        exported = read_model_dir(base / "export")
        report(config["architectures"] == [arch] and set(exported) == set(ckpt) and
               all(exported[k][2] == ckpt[k][2] for k in ckpt),
               f"{name}: {arch}, {len(exported)} tensors byte-equal to the checkpoint")
        if name != "tiny-dense":
            continue
        run = subprocess.run([trainer, "forward", "--model", str(base / "export"), "--ids",
                              ",".join(map(str, ids))], capture_output=True, text=True)
        if not report(run.returncode == 0, f"{name}: grpo-trainer forward on the export "
                      f"{run.stderr.strip()}"):
            continue
        got = torch.tensor(json.loads(run.stdout)["logits"], dtype=torch.float64)
        want = ref.reference_logits(config, {k: to_torch(t) for k, t in exported.items()}, ids)
        diff = (got - want).abs().max().item()
        report(diff <= ref.TOLERANCE, f"{name}: hf_reference forward on the generated config.json "
               f"vs grpo-trainer forward: max |diff| {diff:.2e}")


def one_line(run, code, expect, what):
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    return report(run.returncode == code and len(lines) == 1 and expect in lines[0],
                  f"{what}: exit {run.returncode}, {lines[-1] if lines else '(no stderr)'}")


def check_errors(launch, trainer, work):
    base = (Path(work) / "errors").resolve()
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    one_line(export(launch, base / "nope", base / "out"), 2, "run directory not found",
             "missing run directory")
    (base / "empty-run").mkdir()
    one_line(export(launch, base / "empty-run", base / "out"), 2, "no checkpoint",
             "run without checkpoints")
    ref.write_case("qwen3-tied", base / "model")
    if not train_one_rank_unchanged(trainer, base / "model", base / "run", steps=2):
        report(False, "errors: a run to export")
        return
    # The newest checkpoint does not verify: the one before it is exported, with a warning.
    (base / "run" / "checkpoints" / "step_00000002" / "rng.safetensors").unlink()
    run = export(launch, base / "run", base / "older")
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    report(run.returncode == 0 and "exported step 1 " in run.stdout and len(lines) == 1 and
           "warning: skipped a checkpoint that does not verify" in lines[0] and
           "step_00000002: missing file rng.safetensors" in lines[0],
           f"newest checkpoint torn: exit {run.returncode}, {run.stdout.strip()} {lines}")
    shutil.rmtree(base / "run" / "checkpoints" / "step_00000002")
    (base / "run" / "checkpoints" / "latest").write_text("step_00000001\n")
    one_line(export(launch, base / "run", base / "out", "--step", "7"), 2,
             "no checkpoint of step 7", "--step 7 (absent)")
    (base / "full").mkdir()
    (base / "full" / "keep.txt").write_text("mine\n")
    one_line(export(launch, base / "run", base / "full"), 73, "not empty",
             "output directory not empty")
    report((base / "full" / "keep.txt").read_text() == "mine\n" and
           len(list((base / "full").iterdir())) == 1, "the non-empty directory is untouched")
    (base / "empty-out").mkdir()
    run = export(launch, base / "run", base / "empty-out")
    report(run.returncode == 0 and (base / "empty-out" / "model.safetensors").exists(),
           "an existing empty output directory is filled")
    # What is exported is what was verified: a manifest that does not list model.safetensors
    # verifies (its listed files do) but the unlisted file is not exported unchecked (it was,
    # from a second read of the file).
    shutil.copytree(base / "run", base / "unlisted")
    manifest = base / "unlisted" / "checkpoints" / "step_00000001" / "manifest.json"
    m = json.loads(manifest.read_text())
    del m["files"]["model.safetensors"]
    manifest.write_text(json.dumps(m, indent=2) + "\n")
    one_line(export(launch, base / "unlisted", base / "out"), 2,
             "the manifest lists no model.safetensors", "model.safetensors not in the manifest")
    model = base / "run" / "checkpoints" / "step_00000001" / "model.safetensors"
    data = bytearray(model.read_bytes())
    data[-1] ^= 0x01  # one bit of the last weight
    model.write_bytes(bytes(data))
    one_line(export(launch, base / "run", base / "out"), 2,
             "model.safetensors: SHA-256 does not match the manifest", "corrupted checkpoint")
    one_line(export(launch, base / "run", base / "out", "--step", "1"), 2,
             "step_00000001: does not verify: model.safetensors: SHA-256 does not match",
             "corrupted checkpoint, --step 1")
    one_line(export(launch, base / "run", base / "out", "--max-shard-size", "5XB"), 2,
             "--max-shard-size", "bad --max-shard-size")
    report(not (base / "out").exists() and not any(p.name.startswith(".tmp-export")
                                                    for p in base.iterdir()),
           "failed exports left nothing behind")


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    launch, trainer, work = argv[1], argv[2], argv[3]
    check_round_trip(launch, trainer, work)
    check_builtin(launch, trainer, work)
    check_errors(launch, trainer, work)
    check_two_ranks(launch, trainer, work)
    if FAILED:
        print(f"{len(FAILED)} failed: " + "; ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
