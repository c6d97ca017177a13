"""Stand-in for `python3 -m verl.trainer.main_ppo` (tests only; see ../../../README.md). Not verl.

What it copies from verl: Hydra-style key=value overrides; the console step lines of
verl/utils/tracking.py (LocalLogger: "step:N - key:value - ..."), printed by the TaskRunner actor
and forwarded by Ray with a "(TaskRunner pid=N)" prefix; checkpoints under
trainer.default_local_dir as global_step_N with latest_checkpointed_iteration.txt
(verl/utils/checkpoint/checkpoint_manager.py); trainer.resume_mode=auto resuming from the newest
one; the save before the end that should_save_ckpt_esi decides from
MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP.
"""
import json, os, sys, time

STATE = os.environ.get("GRPO_STANDIN_STATE", "/tmp/grpo-standin-ray")


def overrides(argv):
    out = {}
    for a in argv:
        if "=" not in a:
            print("stand-in main_ppo: not an override: " + a, file=sys.stderr)
            sys.exit(2)
        k, v = a.split("=", 1)
        out[k.lstrip("+")] = v
    return out


def should_save_ckpt_esi(max_steps_duration, save_ckpt_duration=60.0, redundant_time=0.0):
    exp = os.environ.get("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP")
    if not exp:
        return False
    try:
        remaining = float(exp) - time.time()
    except ValueError:
        return False
    return (remaining > 0 and max_steps_duration > 0
            and remaining <= save_ckpt_duration + max_steps_duration + redundant_time)


def save(ckpt_dir, step):
    d = os.path.join(ckpt_dir, "global_step_%d" % step)
    os.makedirs(os.path.join(d, "actor"), exist_ok=True)
    with open(os.path.join(d, "actor", "model.txt"), "w") as f:
        f.write("step %d\n" % step)
    tmp = os.path.join(ckpt_dir, ".tracker.tmp")
    with open(tmp, "w") as f:
        f.write(str(step))
    os.replace(tmp, os.path.join(ckpt_dir, "latest_checkpointed_iteration.txt"))


def fault_once(kind):
    marker = os.path.join(STATE, "fault-done")
    if os.path.exists(marker):
        return False
    open(marker, "w").write(kind)
    return True


def main():
    cfg = overrides(sys.argv[1:])
    os.makedirs(STATE, exist_ok=True)
    with open(os.path.join(STATE, "driver.jsonl"), "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "ray_address": os.environ.get("RAY_ADDRESS"),
                            "esi": os.environ.get("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"),
                            "env_probe": os.environ.get("GRPO_STANDIN_ENV_PROBE")}) + "\n")
    address = os.environ.get("RAY_ADDRESS", "")
    port = address.rsplit(":", 1)[-1]
    cluster = os.path.join(STATE, "cluster-" + port)
    nnodes = int(cfg.get("trainer.nnodes", "1"))
    if not address or not os.path.isdir(cluster) or len(os.listdir(cluster)) < nnodes:
        print("ConnectionError: no Ray cluster of %d node(s) at %r" % (nnodes, address), file=sys.stderr)
        return 1
    total = int(cfg.get("trainer.total_training_steps", "5"))
    save_freq = int(cfg.get("trainer.save_freq", "-1"))
    redundant = float(cfg.get("trainer.esi_redundant_time", "0"))
    ckpt_dir = cfg.get("trainer.default_local_dir", "checkpoints")
    resume_mode = cfg.get("trainer.resume_mode", "auto")
    step_s = float(os.environ.get("GRPO_STANDIN_STEP_S", "0.2"))
    crash_at = int(os.environ.get("GRPO_STANDIN_CRASH_AT", "0"))
    hang_at = int(os.environ.get("GRPO_STANDIN_HANG_AT", "0"))
    start = 0
    tracker = os.path.join(ckpt_dir, "latest_checkpointed_iteration.txt")
    if resume_mode == "auto" and os.path.exists(tracker):
        start = int(open(tracker).read())
        print("Found checkpoint: %s" % os.path.join(ckpt_dir, "global_step_%d" % start), flush=True)
        print("Setting global step to %d" % start, flush=True)
        print("Resuming from %s" % os.path.join(ckpt_dir, "global_step_%d" % start), flush=True)
    else:
        print("Training from scratch", flush=True)
    pid = os.getpid()
    max_steps_duration = 0.0
    for step in range(start + 1, total + 1):
        t0 = time.time()
        if crash_at == step and fault_once("crash"):
            print("(TaskRunner pid=%d) RuntimeError: stand-in crash at step %d" % (pid, step),
                  file=sys.stderr, flush=True)
            return 1
        if hang_at == step and fault_once("hang"):
            while True:
                time.sleep(3600)
        time.sleep(step_s)
        duration = time.time() - t0
        last = step == total
        esi = should_save_ckpt_esi(max_steps_duration, redundant_time=redundant)
        if save_freq > 0 and (last or step % save_freq == 0 or esi):
            if esi:
                print("Force saving checkpoint: ESI instance expiration approaching.", flush=True)
            save(ckpt_dir, step)
        max_steps_duration = max(max_steps_duration, duration)
        score = 0.1 + 0.8 * step / total
        prefix = "\x1b[36m(TaskRunner pid=%d)\x1b[0m " % pid if step % 2 else "(TaskRunner pid=%d) " % pid
        metrics = [
            ("training/global_step", step),
            ("actor/pg_loss", "np.float64(%r)" % (-0.01 * step)),
            ("actor/kl_loss", 0.001 * step),
            ("actor/entropy", 1.5 - 0.01 * step),
            ("actor/pg_clipfrac", 0.02),
            ("actor/grad_norm", 0.5),
            ("actor/lr", 1e-06),
            ("critic/score/mean", score),
            ("critic/rewards/mean", score),
            ("response_length/mean", 200.0),
            ("perf/total_num_tokens", 40960),
            ("perf/throughput", 1234.5),
            ("timing_s/step", round(duration, 4)),
        ]
        if step % 2 == 0:
            metrics.append(("val-core/openai/gsm8k/reward/mean@1", score - 0.05))
        line = "step:%d - " % step + " - ".join("%s:%s" % (k, v) for k, v in metrics)
        print(prefix + line, flush=True)
        with open(os.path.join(STATE, "driver-step"), "w") as f:
            f.write(str(step))
    return 0


if __name__ == "__main__":
    sys.exit(main())
