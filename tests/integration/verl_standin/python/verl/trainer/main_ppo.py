"""Stand-in for `python3 -m verl.trainer.main_ppo` (tests only; see ../../../README.md). Not verl.

Each behaviour below names the verl (b178a3cd) or Ray source it imitates; the stand-in is never
kinder than those.
"""
import json, os, sys, time

STATE = os.environ.get("GRPO_STANDIN_STATE", "/tmp/grpo-standin-ray")


def overrides(argv):
    # Hydra key=value overrides (verl/trainer/main_ppo.py main, @hydra.main).
    out = {}
    for a in argv:
        if "=" not in a:
            print("stand-in main_ppo: not an override: " + a, file=sys.stderr)
            sys.exit(2)
        k, v = a.split("=", 1)
        out[k.lstrip("+")] = v
    return out


def hydra_list(value):
    v = value.strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    return [x.strip().strip("'\"") for x in v.split(",") if x.strip()]


def is_null(v):
    return v is None or v.strip() in ("", "null", "None", "~")


def should_save_ckpt_esi(max_steps_duration, save_ckpt_duration=60.0, redundant_time=0.0):
    # verl/utils/checkpoint/checkpoint_manager.py should_save_ckpt_esi (the MLP_ branch).
    exp = os.environ.get("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP")
    if not exp:
        return False
    try:
        remaining = float(exp) - time.time()
    except ValueError:
        return False
    return (remaining > 0 and max_steps_duration > 0
            and remaining <= save_ckpt_duration + max_steps_duration + redundant_time)


def save(ckpt_dir, step, save_s):
    # verl/trainer/ppo/ray_trainer.py _save_checkpoint: prints the folder first, the workers
    # write actor/ (fsdp_checkpoint_manager.py: model_world_size_W_rank_R.pt), the driver writes
    # data.pt, then the tracker is written in place with open(..., "w") (not atomically).
    folder = os.path.join(ckpt_dir, "global_step_%d" % step)
    print("local_global_step_folder: " + folder, flush=True)
    os.makedirs(os.path.join(folder, "actor"), exist_ok=True)
    time.sleep(save_s)
    with open(os.path.join(folder, "actor", "model_world_size_1_rank_0.pt"), "w") as f:
        f.write("step %d\n" % step)
    with open(os.path.join(folder, "data.pt"), "w") as f:
        f.write("dataloader\n")
    with open(os.path.join(ckpt_dir, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(step))


def fault_once(kind):
    marker = os.path.join(STATE, "fault-done")
    if os.path.exists(marker):
        return False
    open(marker, "w").write(kind)
    return True


def load_checkpoint(cfg, ckpt_dir):
    # verl/trainer/ppo/ray_trainer.py _load_checkpoint.
    mode = cfg.get("trainer.resume_mode", "auto")  # ppo_trainer.yaml: resume_mode: auto
    if mode == "disable":
        return 0
    if not is_null(cfg.get("trainer.default_hdfs_dir")):
        raise NotImplementedError("load from hdfs is not implemented yet")
    folder = ckpt_dir if os.path.isabs(ckpt_dir) else os.path.join(os.getcwd(), ckpt_dir)
    found = None  # checkpoint_manager.py find_latest_ckpt_path
    tracker = os.path.join(folder, "latest_checkpointed_iteration.txt")
    if os.path.exists(tracker):
        it = int(open(tracker, "rb").read().decode())
        p = os.path.join(folder, "global_step_%d" % it)
        found = p if os.path.exists(p) else None
    else:
        print("Checkpoint tracker file does not exist: " + tracker, flush=True)
    if mode == "auto":
        if found is None:
            print("Training from scratch", flush=True)
            return 0
    elif mode == "resume_path":
        found = cfg.get("trainer.resume_from_path")
        assert found and "global_step_" in found, "resume ckpt must specify the global_steps"
    print("Load from checkpoint folder: %s" % found, flush=True)
    step = int(found.split("global_step_")[-1])
    print("Setting global step to %d" % step, flush=True)
    print("Resuming from %s" % found, flush=True)
    return step


def main():
    cfg = overrides(sys.argv[1:])
    os.makedirs(STATE, exist_ok=True)
    with open(os.path.join(STATE, "driver.jsonl"), "a") as f:
        f.write(json.dumps({"argv": sys.argv[1:], "ray_address": os.environ.get("RAY_ADDRESS"),
                            "esi": os.environ.get("MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP"),
                            "env_probe": os.environ.get("GRPO_STANDIN_ENV_PROBE"),
                            "time": time.time()}) + "\n")
    address = os.environ.get("RAY_ADDRESS", "")
    # verl/trainer/main_ppo.py run_ppo passes ray_kwargs.ray_init to ray.init; joining the
    # cluster named by RAY_ADDRESS, ray/_private/worker.py init raises for these.
    for k in ("num_cpus", "num_gpus", "resources", "labels", "object_store_memory", "_node_name"):
        if address and not is_null(cfg.get("ray_kwargs.ray_init." + k)):
            print("ValueError: When connecting to an existing cluster, num_cpus and num_gpus "
                  "must not be provided.", file=sys.stderr, flush=True)
            return 1
    port = address.rsplit(":", 1)[-1]
    cluster = os.path.join(STATE, "cluster-" + port)
    nnodes = int(cfg.get("trainer.nnodes", "1"))
    if not address or not os.path.isdir(cluster) or len(os.listdir(cluster)) < nnodes:
        print("ConnectionError: no Ray cluster of %d node(s) at %r" % (nnodes, address), file=sys.stderr)
        return 1
    total = int(cfg.get("trainer.total_training_steps", "5"))
    save_freq = int(cfg.get("trainer.save_freq", "-1"))      # ppo_trainer.yaml: -1
    test_freq = int(cfg.get("trainer.test_freq", "-1"))      # ppo_trainer.yaml: -1
    redundant = float(cfg.get("trainer.esi_redundant_time", "0"))
    ckpt_dir = cfg.get("trainer.default_local_dir", "checkpoints")
    # verl/utils/tracking.py Tracking: the console lines only with "console" in trainer.logger
    # (ppo_trainer.yaml: logger: ["console", "wandb"]).
    console = "console" in hydra_list(cfg.get("trainer.logger", '["console","wandb"]'))
    val_before_train = cfg.get("trainer.val_before_train", "True").lower() == "true"
    step_s = float(os.environ.get("GRPO_STANDIN_STEP_S", "0.2"))
    save_s = float(os.environ.get("GRPO_STANDIN_SAVE_S", "0"))
    test_s = float(os.environ.get("GRPO_STANDIN_TEST_S", "0"))
    crash_at = int(os.environ.get("GRPO_STANDIN_CRASH_AT", "0"))
    hang_at = int(os.environ.get("GRPO_STANDIN_HANG_AT", "0"))
    exit0_at = int(os.environ.get("GRPO_STANDIN_EXIT0_AT", "0"))
    pid = os.getpid()

    def log(step, metrics):
        # verl/utils/logger/aggregate_logger.py LocalLogger.log / concat_dict_to_str, printed by
        # the TaskRunner actor and forwarded by Ray with "(TaskRunner pid=N)" (coloured or not:
        # ray/_private/worker.py print_worker_logs).
        if not console:
            return
        prefix = "\x1b[36m(TaskRunner pid=%d)\x1b[0m " % pid if step % 2 else "(TaskRunner pid=%d) " % pid
        print(prefix + "step:%d - " % step + " - ".join("%s:%s" % (k, v) for k, v in metrics),
              flush=True)

    # ray_trainer.py fit: load the checkpoint, validate before training (logged at the loaded
    # step), then train from global_steps + 1.
    global_steps = load_checkpoint(cfg, ckpt_dir)
    if val_before_train:
        time.sleep(test_s)
        log(global_steps, [("val-core/openai/gsm8k/reward/mean@1", 0.1)])
    global_steps += 1
    max_steps_duration = 0.0
    while True:
        is_last = global_steps >= total
        step = global_steps
        if exit0_at == step and fault_once("exit0"):
            return 0
        if crash_at == step and fault_once("crash"):
            print("(TaskRunner pid=%d) RuntimeError: stand-in crash at step %d" % (pid, step),
                  file=sys.stderr, flush=True)
            return 1
        if hang_at == step and fault_once("hang"):
            while True:
                time.sleep(3600)
        t0 = time.time()
        time.sleep(step_s)  # marked_timer("step"): generation, rewards, update
        timing = {"step": time.time() - t0}
        score = 0.1 + 0.8 * min(step, total) / total
        metrics = []
        if test_freq > 0 and (is_last or step % test_freq == 0):
            t1 = time.time()
            time.sleep(test_s)
            timing["testing"] = time.time() - t1
            metrics.append(("val-core/openai/gsm8k/reward/mean@1", score - 0.05))
        esi = should_save_ckpt_esi(max_steps_duration, redundant_time=redundant)
        if save_freq > 0 and (is_last or step % save_freq == 0 or esi):
            if esi:
                print("Force saving checkpoint: ESI instance expiration approaching.", flush=True)
            t1 = time.time()
            save(ckpt_dir, step, save_s)
            timing["save_checkpoint"] = time.time() - t1
        max_steps_duration = max(max_steps_duration, timing["step"])
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
        ] + metrics + [("timing_s/" + k, round(v, 4)) for k, v in timing.items()]
        log(step, metrics)
        with open(os.path.join(STATE, "driver-step"), "w") as f:
            f.write(str(step))
        global_steps += 1
        if is_last:
            return 0


if __name__ == "__main__":
    sys.exit(main())
