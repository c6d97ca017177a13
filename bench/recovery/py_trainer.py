#!/usr/bin/python3
"""A tiny data-parallel GRPO-like trainer in Python (torch + gloo) for the recovery benchmark:
the same model shape and step as grpo-trainer with bench/recovery/bench-dense.toml and the
benchmark's settings (d=128, 2 layers, 4 heads / 2 KV heads, head_dim 32, SwiGLU 384, vocab 64,
4 prompts x 2 responses per step over all ranks, 4 new tokens, one PPO epoch, AdamW, gradients
all-reduced over gloo, a checkpoint every 5 steps, resume from the newest).

Run under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Writes one JSON line per
event to $BENCH_LOG/rank-<r>.jsonl with wall-clock times: proc_start (before `import torch`),
imported, pg_ready, ckpt_loaded, step.
"""
import json
import os
import time

T_START = time.time()
LOG_DIR = os.environ.get("BENCH_LOG", ".")
RANK = int(os.environ.get("RANK", "0"))
_log = open(os.path.join(LOG_DIR, f"rank-{RANK}.jsonl"), "a", buffering=1)


def log(event, **kw):
    kw.update({"event": event, "t": time.time(), "rank": RANK, "pid": os.getpid()})
    _log.write(json.dumps(kw) + "\n")


log("proc_start", t_start=T_START)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

log("imported")

VOCAB, D, LAYERS, HEADS, KV, HD, FFN = 64, 128, 2, 4, 2, 32, 384
PROMPTS, N, NEW, PLEN = 4, 2, 4, 8
TOTAL = int(os.environ.get("BENCH_STEPS", "20"))
SAVE = 5
CKPT = os.environ.get("BENCH_CKPT", "ckpt")


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


def rope(x, pos):
    half = x.shape[-1] // 2
    inv = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float32) / half))
    ang = pos[:, None].float() * inv[None, :]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]  # [t, 1, half] over the heads
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(D), RMSNorm(D)
        self.q = nn.Linear(D, HEADS * HD, bias=False)
        self.k = nn.Linear(D, KV * HD, bias=False)
        self.v = nn.Linear(D, KV * HD, bias=False)
        self.o = nn.Linear(HEADS * HD, D, bias=False)
        self.qn, self.kn = RMSNorm(HD), RMSNorm(HD)
        self.gate = nn.Linear(D, FFN, bias=False)
        self.up = nn.Linear(D, FFN, bias=False)
        self.down = nn.Linear(FFN, D, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.n1(x)
        pos = torch.arange(t)
        q = rope(self.qn(self.q(h).view(b, t, HEADS, HD)), pos).transpose(1, 2)
        k = rope(self.kn(self.k(h).view(b, t, KV, HD)), pos).transpose(1, 2)
        v = self.v(h).view(b, t, KV, HD).transpose(1, 2)
        k = k.repeat_interleave(HEADS // KV, 1)
        v = v.repeat_interleave(HEADS // KV, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(
            F, "scaled_dot_product_attention") else self._attn(q, k, v)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, HEADS * HD))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))

    @staticmethod
    def _attn(q, k, v):
        t = q.shape[-2]
        s = q @ k.transpose(-1, -2) / HD ** 0.5
        s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        return s.softmax(-1) @ v


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def newest_checkpoint():
    if not os.path.isdir(CKPT):
        return None
    steps = [int(n[5:]) for n in os.listdir(CKPT) if n.startswith("step_") and n[5:].isdigit()]
    return max(steps) if steps else None


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    log("pg_ready", world=world)
    torch.manual_seed(1)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5)
    start = 0
    newest = newest_checkpoint()
    if newest is not None:
        state = torch.load(os.path.join(CKPT, f"step_{newest:08d}", "state.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        torch.set_rng_state(state["rng"][RANK])
        start = newest
        log("ckpt_loaded", step=newest)
    else:
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    ref = Model()
    ref.load_state_dict(model.state_dict())
    gen = torch.Generator().manual_seed(1000 + RANK)
    for step in range(start + 1, TOTAL + 1):
        t0 = time.time()
        prompts = torch.randint(3, VOCAB, (PROMPTS // world, PLEN), generator=gen)
        seqs = prompts.repeat_interleave(N, 0)
        with torch.no_grad():  # rollout: sample NEW tokens
            for _ in range(NEW):
                logits = model(seqs)[:, -1]
                nxt = torch.multinomial(logits.softmax(-1), 1, generator=gen)
                seqs = torch.cat([seqs, nxt], 1)
        reward = (seqs[:, PLEN:] % 2 == 0).float().mean(-1)
        adv = (reward - reward.view(-1, N).mean(-1).repeat_interleave(N)) / (
            reward.view(-1, N).std(-1).repeat_interleave(N) + 1e-6)
        tgt = seqs[:, PLEN:]
        with torch.no_grad():
            old = F.log_softmax(model(seqs)[:, PLEN - 1:-1], -1).gather(-1, tgt[..., None])[..., 0]
            refl = F.log_softmax(ref(seqs)[:, PLEN - 1:-1], -1).gather(-1, tgt[..., None])[..., 0]
        lp = F.log_softmax(model(seqs)[:, PLEN - 1:-1], -1).gather(-1, tgt[..., None])[..., 0]
        ratio = (lp - old).exp()
        pg = -torch.min(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
        kl = (refl - lp).exp() - (refl - lp) - 1
        loss = (pg + 0.001 * kl).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % SAVE == 0:
            rngs = [torch.zeros_like(torch.get_rng_state()) for _ in range(world)]
            dist.all_gather(rngs, torch.get_rng_state())
            if RANK == 0:
                d = os.path.join(CKPT, f"step_{step:08d}")
                tmp = d + f".tmp{os.getpid()}"
                os.makedirs(tmp, exist_ok=True)
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "rng": rngs},
                           os.path.join(tmp, "state.pt"))
                os.replace(tmp, d) if not os.path.exists(d) else None
            dist.barrier()
        log("step", step=step, step_s=time.time() - t0, loss=float(loss))
    log("done", step=TOTAL)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
