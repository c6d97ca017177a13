#!/usr/bin/env python3
"""Memory per rank at each tested layout: what the planner estimates vs what grpo-trainer holds.

For tiny-moe at every (ranks, TP, EP) below and tiny-dense at every (ranks, TP), with sequence
parallelism off or on (SP; on for tiny-moe with TP, which needs it), on the local-cpu profile,
this runs
  grpo-launch plan ... --set gpus_per_node=W --set tp=T --set ep=E --set etp=1 --set dp=W/T
      --set sequence_parallel=SP --set distributed_optimizer=false --format json
(the constraints `grpo-launch run` adds for the embedded trainer) and reads the per-device
training items "actor weights", "actor gradients" and "actor optimizer states" (GiB, turned back
into bytes), then starts W grpo-trainer ranks at that layout for one SFT step and reads each rank's
`layout` event (param_bytes, grad_bytes, optimizer_bytes). Communication: the cost model's
gradient-reduction bytes (`cost.comm_bytes.dp` of the plan JSON, per GRPO step, divided by its
optimizer steps = train_batch_size / ppo_mini_batch_size x ppo_epochs) against the bytes each rank
handed to all-reduces in its SFT step (one optimizer step; the step event's `comm_bytes`:
`dp.allreduce` + `edp.allreduce` + `world.allreduce`, the last also carrying a few bytes of step
metrics: at most 128 bytes), within 5% or 128 bytes. Expert parallelism (EP > 1): the cost model's
all-to-all bytes (`cost.comm_bytes.ep`, docs/cost-model.md "Expert parallel": rows x k x hidden x
4 bytes per dispatch or combine, `count` = 2 x (passes - 1) x epochs + 2 x lp of them per MoE
layer, rows = train_batch_size x rollout_n x (max_prompt_length + max_response_length) / dp,
divided by TP under sequence parallelism) turned into bytes per token row per training pass
(x 4 / (count x rows): a forward and a backward each dispatch and combine), times the rows the
EP ranks really ran (the step event's `train_rows`, / TP under sequence parallelism), against the
bytes those ranks handed to `ep.alltoall` in the SFT step, summed over the ranks (the cost model
assumes balanced routing; the sum over a group is exact whatever the routing, since every row a
rank receives is one another rank sent), within 5%. Tensor parallelism: the cost model's
`cost.comm_bytes.tp` per token row and collective, times the collectives of a training pass
(2 per layer forward and backward, the embedding's forward and the LM head input's backward:
4L + 2), times the rows run, against the TP bytes of all ranks (under sequence parallelism an
all-gather's output plus a reduce-scatter's input, halved: the pair moves what one all-reduce of
the tensor moves, which is how the cost model counts it),
within 5%. Activations: the embedded trainer's plan (`--set backend=embedded`, what `grpo-launch
run` plans: docs/memory-model.md "The embedded trainer's activations") for the trainer's micro
batch (its micro_batch sequences of the length the data gave the rank: train_rows / its rows),
"activations" + "logits" of the training items, against the step event's
`peak_activation_bytes` of the second SFT step (trainer.measure_activation_memory; the first step
also allocates the gradients), within 15%: the worst rank, or with EP the sum over the ranks (the
plan assumes balanced routing), of the first stage with PP (the plan's figure is the worst
stage's). Rollout weights kept through training (the trainer's `rollout_kept_bytes`: under PP
the other stages' layers, with rollout TP 1 under EP, which the EP cases run, the whole copy) against the embedded plan's "rollout weights (kept)", exactly, on the ranks training the
most. The BF16_CASES rows repeat this with bf16 parameters (the planner's grpo.dtype=bf16,
the trainer's actor_rollout_ref.actor.megatron.dtype=bfloat16: fp32 masters and gradients).
Prints a Markdown table; exits 1 when a planner figure and a measured one differ
(memory: exactly; communication: by more than 5%; activations: by more than 15%).

Long sequences (LONG_CASES, a second table): the activation check at S ~ 1,000 tokens, where the
attention term (materialized probabilities, S per head and token) dominates, on a random Qwen3
made by scripts/make-tiny-qwen.py (/usr/bin/python3 with python3-torch) trained by SFT on a
dataset of one long prompt.

Usage: bench/layouts/run.py [BUILD_DIR]   (default build/; python3's standard library, and
python3-torch for the long-sequence model)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
LAUNCH = os.path.join(BUILD, "bin", "grpo-launch")
TRAINER = os.path.join(BUILD, "bin", "grpo-trainer")
# (model, ranks, TP, EP, SP, PP, ETP)
CASES = [("tiny-moe", 2, 1, 1, False, 1, 1), ("tiny-moe", 2, 1, 2, False, 1, 1),
         ("tiny-moe", 4, 1, 1, False, 1, 1), ("tiny-moe", 4, 1, 2, False, 1, 1),
         ("tiny-moe", 4, 1, 4, False, 1, 1), ("tiny-moe", 2, 2, 1, True, 1, 1),
         ("tiny-moe", 4, 2, 2, True, 1, 1), ("tiny-moe", 4, 2, 4, True, 1, 1),
         ("tiny-moe", 2, 2, 1, True, 1, 2), ("tiny-moe", 4, 2, 2, True, 1, 2),
         ("tiny-dense", 2, 1, 1, False, 1, 1), ("tiny-dense", 2, 2, 1, False, 1, 1),
         ("tiny-dense", 2, 2, 1, True, 1, 1), ("tiny-dense", 4, 2, 1, False, 1, 1),
         ("tiny-dense", 2, 1, 1, False, 2, 1), ("tiny-dense", 4, 1, 1, False, 2, 1),
         ("tiny-moe", 4, 1, 2, False, 2, 1)]
# Mixed precision (dtype bf16: bf16 parameters, fp32 master weights and gradients): the planner
# is asked with grpo.dtype=bf16 (and local-cpu's device marked bf16-capable: LibTorch's CPU
# kernels compute bf16), the trainer started with actor_rollout_ref.actor.megatron.dtype=bfloat16.
BF16_CASES = [("tiny-moe", 4, 2, 2, True, 1, 1), ("tiny-moe", 4, 1, 2, False, 2, 1),
              ("tiny-dense", 2, 1, 1, False, 1, 1), ("tiny-dense", 2, 2, 1, True, 1, 1),
              ("tiny-dense", 2, 1, 1, False, 2, 1)]
BF16_PLAN = ("grpo.dtype=bf16", "device.bf16=true", "device.peak_bf16_tflops=0.1")
ALL_CASES = [c + ("fp32",) for c in CASES] + [c + ("bf16",) for c in BF16_CASES]
GIB = 1 << 30
METRIC_BYTES = 128  # the step's metrics all-reduced over the world: at most 16 doubles


def flag(sp):
    return "true" if sp else "false"


def plan_json(model, world, tp, ep, sp, pp, etp, dtype, *sets):
    """`grpo-launch plan` on local-cpu at this layout, with more `--set` values: its JSON."""
    dp = world // (tp * pp)
    layout = [f"gpus_per_node={world}", f"tp={tp}", f"ep={ep}", f"etp={etp}", f"dp={dp}",
              f"pp={pp}", f"sequence_parallel={flag(sp)}", *sets]
    if dtype == "bf16":
        layout += BF16_PLAN
    out = subprocess.run(
        [LAUNCH, "plan", "-p", "local-cpu", "-m", model, "--format", "json"] +
        [arg for s in layout for arg in ("--set", s)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def planner(model, world, tp, ep, sp, pp, etp, dtype):
    dp = world // (tp * pp)
    j = plan_json(model, world, tp, ep, sp, pp, etp, dtype, "distributed_optimizer=false")
    plan, w = j["plan"], j["workload"]
    items = plan["memory"]["training"]["items_gib"]
    want = {k: round(items[v] * GIB) for k, v in (("param_bytes", "actor weights"),
                                                  ("grad_bytes", "actor gradients"),
                                                  ("optimizer_bytes", "actor optimizer states"))}
    optimizer_steps = w["train_batch_size"] / w["ppo_mini_batch_size"] * w["ppo_epochs"]
    want["grad_reduce_bytes"] = round(plan["cost"]["comm_bytes"]["dp"] / optimizer_steps)
    # The rows a rank dispatches to its experts: its own under SP, the TP group's with ETP = TP.
    replica_rows = (w["train_batch_size"] * w["rollout_n"] *
                    (w["max_prompt_length"] + w["max_response_length"]) / dp)
    rows = replica_rows / (tp // etp if sp else 1)
    lp = 2 if w["use_kl_loss"] else 1  # log-prob passes: old, and the reference's with KL
    count = 2 * (3 - 1) * w["ppo_epochs"] + 2 * lp
    want["ep_bytes_per_row"] = plan["cost"]["comm_bytes"]["ep"] * 4 / (count * rows)
    # TP: the cost model's collectives per step are L x count + ends, plus L_moe x count / 2
    # with ETP (docs/cost-model.md "Tensor parallel"); a training pass (forward and backward) is
    # 4L + 2, plus 2 L_moe with ETP.
    layers = j["model"]["layers"]
    moe_layers = layers - j["model"].get("first_k_dense_layers", 0) if etp > 1 else 0
    ends = 2 * w["ppo_epochs"] + lp
    tp_rows = replica_rows  # a TP collective moves the whole sequence's rows
    want["tp_bytes_per_row"] = (plan["cost"]["comm_bytes"]["tp"] * (4 * layers + 2 + 2 * moe_layers)
                                / ((layers * count + ends + moe_layers * count / 2) * tp_rows))
    # PP (docs/cost-model.md "Pipeline point-to-point"): (2 + lp) sends per micro batch per
    # epoch, each of the micro batch's rows (/ TP under SP): bytes per row and send.
    want["pp_bytes_per_row"] = plan["cost"]["comm_bytes"]["pp"] / (
        replica_rows * w["ppo_epochs"] * (2 + lp))
    return want


def whole_rollout(tp, ep):
    """Whether the case generates with a whole-model copy (rollout TP 1, what `grpo-launch run`
    plans on local-cpu) rather than at the training layout (rollout TP = TP): the EP cases."""
    return ep > 1


def embedded_plan(model, world, tp, ep, sp, pp, etp, dtype, micro, length):
    """The embedded trainer's plan (--set backend=embedded, as `grpo-launch run` plans) for micro
    batches of `micro` sequences of `length` tokens, at the case's rollout TP: its training items
    "activations" + "logits" and "rollout weights (kept)" (bytes; the worst stage's)."""
    rollout_tp = 1 if whole_rollout(tp, ep) else tp
    j = plan_json(model, world, tp, ep, sp, pp, etp, dtype, "backend=embedded",
                  f"micro_batch={micro}", f"rollout_tp={rollout_tp}",
                  f"grpo.max_prompt_length={length - 1}", "grpo.max_response_length=1")
    items = j["plan"]["memory"]["training"]["items_gib"]
    return (round((items["activations"] + items["logits"]) * GIB),
            round(items.get("rollout weights (kept)", 0) * GIB))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ranks(world, args_of_rank):
    """`world` grpo-trainer ranks (torchrun-style environment, loopback): their events."""
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_WAIT_POLICY="PASSIVE")
        env.pop("GRPO_FAULT", None)
        procs.append(subprocess.Popen([TRAINER] + args_of_rank(r), env=env,
                                      stdout=subprocess.PIPE, text=True))
    events = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit(f"grpo-trainer exited {p.returncode}: {' '.join(args_of_rank(0))}")
        events += [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return events


def layout_sets(world, tp, ep, sp, pp, etp, dtype):
    """The trainer's settings for a layout (and its precision)."""
    m = "actor_rollout_ref.actor.megatron."
    sets = [f"{m}pipeline_model_parallel_size={pp}", f"{m}expert_model_parallel_size={ep}",
            f"{m}expert_tensor_parallel_size={etp}", f"{m}tensor_model_parallel_size={tp}",
            f"{m}sequence_parallel={flag(sp)}",
            f"{m}dtype={'bfloat16' if dtype == 'bf16' else 'float32'}",
            "actor_rollout_ref.rollout.tensor_model_parallel_size="
            f"{1 if whole_rollout(tp, ep) else 0}"]
    return [arg for s in sets for arg in ("--set", s)]


def trainer(model, world, tp, ep, sp, pp, etp, dtype):
    with tempfile.TemporaryDirectory() as d:
        args = ["--model", model, "--run-dir", d, "--log-level", "warn",
                "--set", "trainer.sft_warmup_steps=2", "--set", "trainer.total_training_steps=0",
                "--set", "trainer.sft_batch_size=8", "--set", "data.val_size=8",
                "--set", "trainer.measure_activation_memory=true",
                "--set", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="
                f"{8 // (world // (tp * pp)) // pp}",
                "--set", "trainer.threads=1", "--set", "trainer.save_freq=-1"]
        events = start_ranks(world, lambda r: args + layout_sets(world, tp, ep, sp, pp, etp,
                                                                  dtype))
        return ([e for e in events if e.get("type") == "layout"],
                [e for e in events if e.get("type") == "step"])


# Long sequences (the attention term grows with S): a random Qwen3 of hidden 256, 2 layers,
# 16 heads of 16, with Qwen3's vocabulary (scripts/make-tiny-qwen.py; needs python3-torch), SFT
# on a verl-format dataset whose every record is the same prompt of ~1,000 tokens: 2 SFT steps of
# micro batches of 4 sequences, at (ranks, TP, dtype).
LONG_CASES = [(1, 1, "fp32"), (1, 1, "bf16"), (2, 2, "fp32"), (2, 2, "bf16")]
LONG_PROMPT_REPEATS = 110  # "the quick brown fox jumps over the lazy dog" x 110: 1,002 tokens


def long_sequences():
    """Rows for LONG_CASES: the embedded plan's activations + logits against the measured peak
    (the worst rank), and whether they are within 15%."""
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "model")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "make-tiny-qwen.py"),
                        model, "--hidden", "256", "--layers", "2", "--dtype", "fp32"],
                       check=True, capture_output=True)
        data = os.path.join(d, "train.jsonl")
        record = {"data_source": "openai/gsm8k", "extra_info": {"answer": "#### 1"},
                  "reward_model": {"style": "rule", "ground_truth": "1"},
                  "prompt": [{"role": "user", "content": " ".join(
                      ["the quick brown fox jumps over the lazy dog"] * LONG_PROMPT_REPEATS)}]}
        with open(data, "w") as f:
            f.write((json.dumps(record) + "\n") * 64)
        micro = 4
        for world, tp, dtype in LONG_CASES:
            dp = world // tp
            run = os.path.join(d, f"run-{world}-{tp}-{dtype}")
            args = ["--model", model, "--run-dir", run, "--log-level", "warn",
                    "--set", f"data.train_files=[{data}]", "--set", f"data.val_files={data}",
                    "--set", "data.max_prompt_length=4000", "--set", "data.max_response_length=8",
                    "--set", "trainer.sft_warmup_steps=2", "--set", "trainer.total_training_steps=1",
                    "--set", f"trainer.sft_batch_size={micro * dp}",
                    "--set", f"data.train_batch_size={2 * dp}", "--set", "actor_rollout_ref.rollout.n=2",
                    "--set", f"actor_rollout_ref.actor.ppo_mini_batch_size={2 * dp}",
                    "--set", "trainer.test_freq=-1",
                    "--set", f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro}",
                    "--set", "trainer.measure_activation_memory=true", "--set", "data.val_size=4",
                    "--set", "trainer.val_before_train=false", "--set", "trainer.save_freq=-1",
                    "--set", f"trainer.threads={max(1, 2 // world)}"]
            events = start_ranks(world, lambda r: args + layout_sets(world, tp, 1, tp > 1, 1, 1,
                                                                      dtype))
            second = [e for e in events if e.get("type") == "step" and e["step"] == 2]
            grpo = [e for e in events if e.get("type") == "step" and e["step"] == 3]
            length = second[0]["train_rows"] // micro
            # The response: the answer "#### 1" and the end token (at most 8 tokens).
            j = plan_json(model, world, tp, 1, tp > 1, 1, 1, dtype, "backend=embedded",
                          f"micro_batch={micro}", f"rollout_tp={tp}",
                          f"grpo.max_prompt_length={length - 8}", "grpo.max_response_length=8",
                          f"grpo.train_batch_size={2 * dp}", "grpo.rollout_n=2",
                          f"grpo.ppo_mini_batch_size={2 * dp}")
            memory = j["plan"]["memory"]
            items = memory["training"]["items_gib"]
            generation = memory["rollout"]["items_gib"]
            for what, planned, peak in (
                    ("training activations + logits",
                     round((items["activations"] + items["logits"]) * GIB),
                     max(e["peak_activation_bytes"] for e in second)),
                    (f"rollout KV cache + workspace ({memory['embedded_rollout_seqs']} sequences)",
                     round((generation["KV cache"] + generation["rollout workspace"]) * GIB),
                     max(e["peak_rollout_bytes"] for e in grpo))):
                ratio = peak / planned
                close = abs(ratio - 1) <= 0.15
                ok &= close
                rows.append(f"| hidden 256, 2 layers, S = {length} | {world} | {tp} | {dtype} | "
                            f"{what} | {planned} | {peak} | "
                            f"{'within 15%' if close else 'NO'}: x {ratio:.3f} |")
    return rows, ok


def main():
    print("| model | ranks | TP | EP | SP | PP | ETP | dtype | item | planner (bytes per device) | "
          "measured (bytes per rank) | equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for model, world, tp, ep, sp, pp, etp, dtype in ALL_CASES:
        want = planner(model, world, tp, ep, sp, pp, etp, dtype)
        got, steps = trainer(model, world, tp, ep, sp, pp, etp, dtype)
        head = (f"| {model} | {world} | {tp} | {ep} | {'on' if sp else 'off'} | {pp} | {etp} | "
                f"{dtype} |")
        reduced = sorted({sum(e["comm_bytes"].get(k, 0) for k in
                              ("dp.allreduce", "edp.allreduce", "world.allreduce")) for e in steps})
        # 5%, and at least the step metrics' own all-reduce over the world (a few doubles,
        # METRIC_BYTES), which rides in world.allreduce with the gradients.
        close = bool(reduced) and all(abs(v - want["grad_reduce_bytes"]) <= max(
            0.05 * want["grad_reduce_bytes"], METRIC_BYTES) for v in reduced)
        ok &= close
        print(f"{head} grad_reduce_bytes | "
              f"{want['grad_reduce_bytes']} | {', '.join(map(str, reduced))} | "
              f"{'within 5%' if close else 'NO'} |")
        if ep > 1:
            sent = sum(e["comm_bytes"].get("ep.alltoall", 0) for e in steps)
            rows = sum(e["train_rows"] / (tp // etp if sp else 1) for e in steps)
            expect = round(want["ep_bytes_per_row"] * rows)
            close = sent > 0 and abs(sent - expect) <= 0.05 * expect
            ok &= close
            print(f"{head} "
                  f"ep_alltoall_bytes (all ranks) | {expect} | {sent} | "
                  f"{'within 5%' if close else 'NO'} |")
        if tp > 1:
            # With SP an all-gather (its output: own part x TP) and a reduce-scatter (its input)
            # together move what one all-reduce of the same tensor moves: Megatron's count.
            sent = round(sum(e["comm_bytes"].get("tp.allreduce", 0) +
                             (e["comm_bytes"].get("tp.allgather", 0) * tp +
                              e["comm_bytes"].get("tp.reduce_scatter", 0)) / 2 for e in steps))
            expect = round(want["tp_bytes_per_row"] * sum(e["train_rows"] for e in steps))
            close = sent > 0 and abs(sent - expect) <= 0.05 * expect
            ok &= close
            print(f"{head} "
                  f"tp_bytes (all ranks) | {expect} | {sent} | "
                  f"{'within 5%' if close else 'NO'} |")
        # Activations: step 2 (step 1 also allocates the gradients). Each rank's peak against
        # the plan for its micro batch (micro sequences of its length, which the data decides:
        # train_rows / its rows). With PP the plan's figure is the worst stage's: the first
        # stage's ranks. With EP the mean over the ranks (the plan assumes balanced routing; a
        # rank's own peak follows its share of the routed tokens).
        second = [e for e in steps if e["step"] == 2]
        rows = 8 // (world // (tp * pp))  # the rank's SFT examples
        micro = rows // pp
        stage = {e["rank"]: e.get("stage", 0) for e in got}
        plans = [(embedded_plan(model, world, tp, ep, sp, pp, etp, dtype, micro,
                                e["train_rows"] // rows), e) for e in second]
        pairs = [(plan[0], e["peak_activation_bytes"]) for plan, e in plans
                 if stage[e["rank"]] == 0]
        if ep > 1:
            planned, peak = (sum(p for p, _ in pairs), sum(m for _, m in pairs))
        else:
            planned, peak = max(pairs, key=lambda p: p[1] / p[0])
        ratio = peak / planned
        close = abs(ratio - 1) <= 0.15
        ok &= close
        print(f"{head} peak_activation_bytes ({'sum over' if ep > 1 else 'worst of'} the "
              f"{'first stage' if pp > 1 else 'ranks'}) | {planned} | {peak} | "
              f"{'within 15%' if close else 'NO'}: x {ratio:.3f} |")
        if pp > 1:
            # Per rank: a stage sends its activations on (all but the last) and its input's
            # gradient back (all but the first) for each micro batch of its rows.
            stage = {e["rank"]: e["stage"] for e in got}
            sent = sum(e["comm_bytes"].get("pp.send", 0) for e in steps)
            expect = round(want["pp_bytes_per_row"] * sum(
                e["train_rows"] * ((stage[e["rank"]] < pp - 1) + (stage[e["rank"]] > 0))
                for e in steps))
            close = sent > 0 and abs(sent - expect) <= 0.05 * expect
            ok &= close
            print(f"{head} pp_send_bytes (all ranks) | {expect} | {sent} | "
                  f"{'within 5%' if close else 'NO'} |")
        # What the ranks keep for generation besides what they train (PP: the other stages'
        # layers; rollout TP 1 under TP x EP: the whole copy), on the rank(s) training the most:
        # the planner's figure is the worst stage's.
        kept_want = plans[0][0][1]
        most = max(e["param_bytes"] for e in got)
        kept = sorted({e["rollout_kept_bytes"] for e in got if e["param_bytes"] == most})
        equal = kept == [kept_want]
        ok &= equal
        print(f"{head} rollout_kept_bytes{' (whole copy)' if whole_rollout(tp, ep) else ''} | "
              f"{kept_want} | {', '.join(map(str, kept))} | {'yes' if equal else 'NO'} |")
        for key in ("param_bytes", "grad_bytes", "optimizer_bytes"):
            values = sorted({e[key] for e in got})
            # The planner keeps the stage with the most (docs/memory-model.md): with PP the
            # largest stage's figure equals it, the others hold less.
            equal = values[-1] == want[key] if pp > 1 else values == [want[key]]
            ok &= equal
            print(f"{head} {key} | {want[key]} | "
                  f"{', '.join(map(str, values))} | {'yes' if equal else 'NO'} |")
    print()
    print("| long sequences | ranks | TP | dtype | item | planned | peak (worst rank) | "
          "within 15% |")
    print("|---|---|---|---|---|---|---|---|")
    rows, long_ok = long_sequences()
    print("\n".join(rows))
    return 0 if ok and long_ok else 1


if __name__ == "__main__":
    sys.exit(main())
