#!/usr/bin/env python3
"""TensorBoard event files of grpo-trainer, read by an independent reader (docs/tensorboard.md).

Usage: tensorboard_reader.py GRPO_TRAINER WORK_DIR

Runs grpo-trainer on tiny-moe with two ranks and trainer.logger=['console','tensorboard'], then
reads <run_dir>/tensorboard/ with code that shares nothing with the writer:
  - the record framing (uint64 LE length, masked CRC-32C of the length, data, masked CRC-32C of
    the data) is walked here, and both CRCs of every record are checked with python3-crc32c;
  - the Event messages are decoded by python3-protobuf from a descriptor built below with the
    field numbers of TensorFlow's tensorflow/core/util/event.proto and
    tensorflow/core/framework/summary.proto (not from the project's event.proto), and must carry
    no field unknown to that descriptor;
  - every scalar is compared with rank 0's own telemetry (its JSONL stdout): the tag table below
    is written out here from docs/tensorboard.md, and each value must equal the metric rounded to
    a 32-bit float (simple_value is a float).
It also checks that only rank 0 writes, that a run without the logger writes no folder, and that
a logger verl has but grpo-trainer does not is refused with exit 2 and one line.
Debian's python3 with python3-protobuf and python3-crc32c (scripts/install-deps.sh).
"""

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys

import crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FAST = [
    "--model", "tiny-moe",
    "--set", "trainer.sft_warmup_steps=2",
    "--set", "trainer.total_training_steps=4",
    "--set", "trainer.sft_batch_size=8",
    "--set", "data.train_batch_size=4",
    "--set", "actor_rollout_ref.rollout.n=4",
    "--set", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "--set", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "--set", "data.val_size=8",
    "--set", "data.train_size=256",
    "--set", "trainer.test_freq=2",
    "--set", "trainer.save_freq=-1",
    "--set", "trainer.threads=1",
    "--log-level", "warn",
]
LOGGER = ["--set", "trainer.logger=['console','tensorboard']"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def masked(data):
    c = crc32c.crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    """Event with TensorFlow's field numbers (event.proto, summary.proto)."""
    fd = descriptor_pb2.FileDescriptorProto(name="oracle_event.proto", package="oracle",
                                            syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    summary = fd.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="node_name", number=7, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL,
                    oneof_index=0)
    value.oneof_decl.add(name="value")
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".oracle.Summary.Value")
    event = fd.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.oneof_decl.add(name="what")
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL,
                    oneof_index=0)
    event.field.add(name="graph_def", number=4, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL,
                    oneof_index=0)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".oracle.Summary", oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("oracle.Event"))


def read_records(path):
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        if len(data) - pos < 12:
            check(False, f"{path}: {len(data) - pos} stray bytes at offset {pos}")
            break
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        check(len_crc == masked(header), f"{path}@{pos}: length CRC {len_crc:#x} != {masked(header):#x}")
        if len(data) - pos < 16 + length:
            check(False, f"{path}@{pos}: record of {length} bytes cut short")
            break
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        check(body_crc == masked(body), f"{path}@{pos}: data CRC {body_crc:#x} != {masked(body):#x}")
        out.append(body)
        pos += 16 + length
    return out


def has_unknown_fields(msg):
    if len(msg.UnknownFields()) > 0:
        return True
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        items = value if field.label == field.LABEL_REPEATED else [value]
        if any(has_unknown_fields(v) for v in items):
            return True
    return False


def expected_tags(step_event, task, world_size):
    """docs/tensorboard.md's table: telemetry field -> tag (and scale)."""
    table = [
        ("reward_mean", "critic/score/mean", None), ("reward_std", "critic/score/std", None),
        ("val_reward", f"val-core/{task}/reward/mean@1", None),
        ("response_length", "response_length/mean", None),
        ("loss", "actor/loss", None), ("pg_loss", "actor/pg_loss", None),
        ("kl", "actor/kl_loss", None), ("entropy", "actor/entropy", None),
        ("clip_frac", "actor/pg_clipfrac", None), ("grad_norm", "actor/grad_norm", None),
        ("lr", "actor/lr", None), ("aux_loss", "actor/moe_aux_loss", None),
        ("sft_loss", "sft/loss", None),
        ("step_s", "timing_s/step", None), ("rollout_s", "timing_s/gen", None),
        ("old_logprob_s", "timing_s/old_log_prob", None), ("ref_logprob_s", "timing_s/ref", None),
        ("update_s", "timing_s/update_actor", None),
        ("tokens", "perf/total_num_tokens", None), ("tokens_per_s", "perf/tokens_per_s", None),
        ("tokens_per_s", "perf/throughput", world_size),
        ("peak_rss_mib", "perf/peak_rss_gib", 1024.0),
    ]
    want = {}
    for field, tag, divisor in table:
        if field in step_event:
            v = float(step_event[field])
            want[tag] = (v / divisor if divisor else v, divisor is not None)
    for layer in step_event.get("expert_imbalance", []):
        want[f"moe/expert_imbalance/layer_{layer['layer']}"] = (float(layer["imbalance"]), False)
    return want


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(exe, run_dir, world, extra):
    os.makedirs(run_dir, exist_ok=True)
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ)
        if world > 1:
            env.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                       LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        out = open(os.path.join(run_dir, f"rank{r}.jsonl"), "w")
        err = open(os.path.join(run_dir, f"rank{r}.stderr"), "w")
        procs.append(subprocess.Popen([exe] + FAST + extra + ["--run-dir", run_dir], stdout=out,
                                      stderr=err, env=env))
    return [p.wait(timeout=600) for p in procs]


def main():
    exe, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    Event = event_class()

    # 1. Two ranks with the TensorBoard logger.
    run_dir = os.path.join(work, "run")
    codes = run_ranks(exe, run_dir, 2, LOGGER)
    if codes != [0, 0]:
        for r in range(2):
            sys.stderr.write(open(os.path.join(run_dir, f"rank{r}.stderr")).read()[-2000:])
        print(f"FAIL: exit codes {codes}")
        return 1
    events = [json.loads(line) for line in open(os.path.join(run_dir, "rank0.jsonl"))]
    start = next(e for e in events if e["type"] == "start")
    tb_dir = os.path.join(run_dir, "tensorboard")
    files = sorted(os.listdir(tb_dir))
    check(len(files) == 1, f"one event file (rank 0 only), got {files}")
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.trainer", files[0])
    check(m is not None, f"file name {files[0]}")
    if m:
        check(int(m.group(3)) == start["pid"], f"pid in the name {m.group(3)} != rank 0's {start['pid']}")
        check(abs(int(m.group(1)) - start["time"]) < 120, "time in the name is the start time")
    records = read_records(os.path.join(tb_dir, files[0]))
    decoded = []
    for body in records:
        ev = Event()
        ev.ParseFromString(body)
        check(not has_unknown_fields(ev), f"a field TensorFlow's Event does not have: {body!r}")
        decoded.append(ev)
    check(len(decoded) > 1, "records after the file version")
    first = decoded[0]
    check(first.WhichOneof("what") == "file_version" and first.file_version == "brain.Event:2",
          f"first record is file_version brain.Event:2, got {first}")

    got = {}  # step -> {tag: value}
    for ev in decoded[1:]:
        check(ev.WhichOneof("what") == "summary", f"a summary event, got {ev}")
        check(abs(ev.wall_time - start["time"]) < 600, f"wall_time {ev.wall_time} is now")
        for v in ev.summary.value:
            check(v.WhichOneof("value") == "simple_value", f"{v.tag}: simple_value")
            got.setdefault(ev.step, {})[v.tag] = v.simple_value

    want = {}
    for e in events:
        if e["type"] == "step":
            want.setdefault(e["step"], {}).update(expected_tags(e, "addition", e["world_size"]))
        elif e["type"] == "validation":
            want.setdefault(e["step"], {})[f"val-core/addition/reward/mean@1"] = (
                float(e["val_reward"]), False)
    check(sorted(got) == sorted(want), f"steps {sorted(got)} != telemetry's {sorted(want)}")
    compared = 0
    for step, tags in want.items():
        have = got.get(step, {})
        check(set(have) == set(tags), f"step {step}: tags {sorted(have)} != {sorted(tags)}")
        for tag, (value, scaled) in tags.items():
            if tag not in have:
                continue
            compared += 1
            if scaled:  # x * (1/n) in C++, x / n here: equal as float32 within one ulp
                ok = abs(have[tag] - f32(value)) <= 1e-6 * max(1.0, abs(value))
            else:
                ok = have[tag] == f32(value)
            check(ok, f"step {step} {tag}: {have[tag]!r} != float32({value!r})")
    # What the issue asks for, each present at least once.
    all_tags = {t for tags in got.values() for t in tags}
    for tag in ["critic/score/mean", "val-core/addition/reward/mean@1", "actor/loss",
                "actor/kl_loss", "actor/entropy", "actor/pg_clipfrac", "actor/grad_norm",
                "perf/throughput", "timing_s/step", "perf/peak_rss_gib",
                "moe/expert_imbalance/layer_0", "moe/expert_imbalance/layer_1", "sft/loss"]:
        check(tag in all_tags, f"tag {tag} written")

    # 2. Without the logger: no folder.
    plain = os.path.join(work, "plain")
    codes = run_ranks(exe, plain, 1, ["--set", "trainer.total_training_steps=1"])
    check(codes == [0], f"run without the logger exits 0, got {codes}")
    check(not os.path.exists(os.path.join(plain, "tensorboard")), "no tensorboard/ without the logger")

    # 3. A verl logger grpo-trainer does not have: exit 2, one line naming the key.
    bad = os.path.join(work, "bad")
    codes = run_ranks(exe, bad, 1, ["--set", "trainer.logger=['console','wandb']"])
    err = open(os.path.join(bad, "rank0.stderr")).read().strip().splitlines()
    check(codes == [2], f"wandb logger exits 2, got {codes}")
    check(len(err) == 1 and "trainer.logger" in err[0] and "wandb" in err[0],
          f"one line naming trainer.logger and wandb, got {err}")

    print(f"{len(records)} records, {len(got)} steps, {compared} scalars compared; "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
