#!/usr/bin/python3
"""The independent reference for Hugging Face checkpoints in (docs/hf-checkpoints.md).

Writes tiny random checkpoints in Hugging Face's format (config.json + safetensors, written here by
hand with struct and json: Debian has no python3-safetensors) and computes their logits with a
plain python3-torch forward pass written from the published architecture, not from our C++:

  - Qwen2 (Qwen2ForCausalLM, Qwen2/Qwen2.5; transformers' modeling_qwen2.py): RMSNorm, rotary
    embeddings with rotate_half, grouped-query attention with a causal mask and bias on q/k/v,
    SwiGLU MLP, untied or tied LM head.
  - Qwen3 (Qwen3ForCausalLM; modeling_qwen3.py): the same without q/k/v bias, plus an RMSNorm
    over head_dim on every query and key head before the rotation (q_norm, k_norm).
  - Qwen3-MoE (Qwen3MoeForCausalLM; modeling_qwen3_moe.py): Qwen3 attention; layers listed in
    mlp_only_layers keep the dense MLP, the others route each token with softmax(gate(x)) over all
    experts, keep the top-k probabilities (renormalized to sum 1 when norm_topk_prob) and add the
    top-k experts' SwiGLU outputs weighted by them.
  - Llama (LlamaForCausalLM; modeling_llama.py) and Mistral (MistralForCausalLM;
    modeling_mistral.py): Qwen2's layers without the q/k/v bias and without q/k norms. Mistral's
    sliding window masks keys at distance >= sliding_window; the cases keep every sequence inside
    the window, and one bad case checks that a longer sequence is refused.
  - Mixtral (MixtralForCausalLM; modeling_mixtral.py): Mistral attention; every layer's
    block_sparse_moe routes with softmax(gate(x)), keeps the top-k and always renormalizes them,
    and each expert computes w2(silu(w1 x) * w3 x).

The reference runs in float64 on the checkpoint's values (bf16 values are exactly representable),
so the comparison measures the trainer's error, not a second fp32 rounding.

  hf_reference.py check TRAINER_EXE WORK_DIR   every case: write, run `TRAINER_EXE forward`,
                                               compare (max |diff| <= 1e-5); exit 1 on a mismatch
  hf_reference.py check-errors TRAINER_EXE WORK_DIR   bad checkpoints: exit 2, one line each
  hf_reference.py check-train TRAINER_EXE WORK_DIR    a short training run from a checkpoint
  hf_reference.py write CASE DIR               write one case's checkpoint (for trying it by hand)
"""
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import torch

TOLERANCE = 1e-5
IDS = [3, 17, 0, 42, 79, 5, 5, 61, 23, 11]

# Each case: the config.json fields, how the weights are stored, and what it exercises.
CASES = {
    # Qwen2-style: q/k/v bias, untied LM head, head_dim derived (48 / 4 = 12), fp32, one file.
    "qwen2-untied": dict(
        config={
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
            "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 80,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "tie_word_embeddings": False, "sliding_window": 128, "use_sliding_window": False,
            "max_window_layers": 2, "torch_dtype": "float32",
        },
        dtype="F32", shards=1),
    # Qwen3 dense: q/k norm, tied embeddings (no lm_head.weight in the file), explicit head_dim
    # (16, not 64 / 8 = 8), rope_theta 1e6, fp32, one file.
    "qwen3-tied": dict(
        config={
            "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
            "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16,
            "vocab_size": 80, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "rope_scaling": None, "attention_bias": False,
            "tie_word_embeddings": True, "sliding_window": None, "use_sliding_window": False,
            "torch_dtype": "float32",
        },
        dtype="F32", shards=1),
    # Qwen3-MoE: layer 0 dense (mlp_only_layers [0]), layers 1-2 MoE with 6 experts, top-2,
    # renormalized; untied; fp32 in 2 shards with model.safetensors.index.json.
    "qwen3moe-sharded": dict(
        config={
            "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 64,
            "moe_intermediate_size": 24, "num_hidden_layers": 3, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 80,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "num_experts": 6, "num_experts_per_tok": 2, "norm_topk_prob": True,
            "decoder_sparse_step": 1, "mlp_only_layers": [0], "tie_word_embeddings": False,
            "attention_bias": False, "use_sliding_window": False, "torch_dtype": "float32",
        },
        dtype="F32", shards=2),
    # Qwen3-MoE without renormalization (norm_topk_prob false), tied, stored as bf16: the
    # trainer converts to fp32 (exact), the reference reads the same bf16 values.
    "qwen3moe-bf16": dict(
        config={
            "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 64,
            "moe_intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 1, "head_dim": 8, "vocab_size": 80,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "num_experts": 4, "num_experts_per_tok": 2, "norm_topk_prob": False,
            "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
        },
        dtype="BF16", shards=1),
    # Qwen2-style with tied embeddings in fp16.
    "qwen2-tied-fp16": dict(
        config={
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
            "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 80,
            "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "torch_dtype": "float16",
        },
        dtype="F16", shards=1),
    # Llama-3 style: no biases, GQA, untied LM head, rope_theta 5e5, bf16.
    "llama-untied-bf16": dict(
        config={
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 80,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        },
        dtype="BF16", shards=1),
    # Llama-3.2 style: tied embeddings, explicit head_dim, fp32.
    "llama-tied": dict(
        config={
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8,
            "vocab_size": 80, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
        },
        dtype="F32", shards=1),
    # Mistral-7B-v0.1 style: a sliding window (64) longer than every sequence here (10 tokens here,
    # at most 40 in the local-cpu runs of hf_families_test.py).
    "mistral-window": dict(
        config={
            "architectures": ["MistralForCausalLM"], "model_type": "mistral",
            "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 56,
            "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 80, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0, "sliding_window": 64, "tie_word_embeddings": False,
            "torch_dtype": "float32",
        },
        dtype="F32", shards=1),
    # Mixtral: 4 experts, top-2, every layer MoE; fp32 in 2 shards.
    "mixtral-sharded": dict(
        config={
            "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
            "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 24,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 80, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
            "rope_theta": 1000000.0, "num_local_experts": 4, "num_experts_per_tok": 2,
            "sliding_window": None, "router_aux_loss_coef": 0.02, "tie_word_embeddings": False,
            "torch_dtype": "float32",
        },
        dtype="F32", shards=2),
}

QWEN2_LIKE = ("Qwen2ForCausalLM",)  # q/k/v bias
NO_QK_NORM = ("Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM")

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


# ---- checkpoint writing ---------------------------------------------------------------------

def parameter_shapes(c):
    """Hugging Face's parameter names and shapes for config `c` (modeling_qwen2/qwen3/qwen3_moe)."""
    arch = c["architectures"][0]
    h, v = c["hidden_size"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    d = c.get("head_dim", h // heads)
    shapes = {"model.embed_tokens.weight": [v, h]}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = [h]
        shapes[p + "post_attention_layernorm.weight"] = [h]
        shapes[p + "self_attn.q_proj.weight"] = [heads * d, h]
        shapes[p + "self_attn.k_proj.weight"] = [kv * d, h]
        shapes[p + "self_attn.v_proj.weight"] = [kv * d, h]
        shapes[p + "self_attn.o_proj.weight"] = [h, heads * d]
        if arch in QWEN2_LIKE:
            shapes[p + "self_attn.q_proj.bias"] = [heads * d]
            shapes[p + "self_attn.k_proj.bias"] = [kv * d]
            shapes[p + "self_attn.v_proj.bias"] = [kv * d]
        if arch not in NO_QK_NORM:
            shapes[p + "self_attn.q_norm.weight"] = [d]
            shapes[p + "self_attn.k_norm.weight"] = [d]
        if arch == "MixtralForCausalLM":
            e, f = c["num_local_experts"], c["intermediate_size"]
            shapes[p + "block_sparse_moe.gate.weight"] = [e, h]
            for j in range(e):
                shapes[p + f"block_sparse_moe.experts.{j}.w1.weight"] = [f, h]
                shapes[p + f"block_sparse_moe.experts.{j}.w2.weight"] = [h, f]
                shapes[p + f"block_sparse_moe.experts.{j}.w3.weight"] = [f, h]
        elif is_moe_layer(c, i):
            e, f = c["num_experts"], c["moe_intermediate_size"]
            shapes[p + "mlp.gate.weight"] = [e, h]
            for j in range(e):
                shapes[p + f"mlp.experts.{j}.gate_proj.weight"] = [f, h]
                shapes[p + f"mlp.experts.{j}.up_proj.weight"] = [f, h]
                shapes[p + f"mlp.experts.{j}.down_proj.weight"] = [h, f]
        else:
            f = c["intermediate_size"]
            shapes[p + "mlp.gate_proj.weight"] = [f, h]
            shapes[p + "mlp.up_proj.weight"] = [f, h]
            shapes[p + "mlp.down_proj.weight"] = [h, f]
    shapes["model.norm.weight"] = [h]
    if not c.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = [v, h]
    return shapes


def is_moe_layer(c, i):
    """Qwen3MoeDecoderLayer: MoE unless listed in mlp_only_layers, every decoder_sparse_step."""
    if c["architectures"][0] != "Qwen3MoeForCausalLM":
        return False
    return (i not in c.get("mlp_only_layers", []) and c.get("num_experts", 0) > 0
            and (i + 1) % c.get("decoder_sparse_step", 1) == 0)


def random_weights(c, dtype, seed):
    """Random values that keep activations and logits of order 1 (so 1e-5 is a tight bound):
    norm weights near 1, matrices (and the LM head) ~ 1/sqrt(fan_in), embeddings 0.25."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in parameter_shapes(c).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.2 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=g)
        elif name == "model.embed_tokens.weight":
            t = 0.25 * torch.randn(shape, generator=g)
        else:
            t = torch.randn(shape, generator=g) / math.sqrt(shape[1])
        out[name] = t.to(TORCH_DTYPES[dtype])
    return out


def tensor_bytes(t):
    """Little-endian raw bytes (numpy has no bfloat16: 16-bit types go through int16)."""
    t = t.contiguous()
    if t.element_size() == 2:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, dtype):
    """The safetensors layout: u64 little-endian header length, JSON header, data (no gaps)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        b = tensor_bytes(t)
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_case(name, out_dir, seed=1):
    case = CASES[name]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("model*.safetensors*"):
        old.unlink()
    (out / "config.json").write_text(json.dumps(case["config"], indent=2) + "\n")
    weights = random_weights(case["config"], case["dtype"], seed)
    if case["shards"] == 1:
        write_safetensors(out / "model.safetensors", weights, case["dtype"])
    else:
        names = list(weights)
        n = case["shards"]
        weight_map = {}
        for s in range(n):
            part = names[s * len(names) // n:(s + 1) * len(names) // n]
            file = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
            write_safetensors(out / file, {k: weights[k] for k in part}, case["dtype"])
            weight_map.update({k: file for k in part})
        index = {"metadata": {"total_size": sum(t.numel() * t.element_size()
                                                for t in weights.values())},
                 "weight_map": weight_map}
        (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return weights


# ---- the reference forward pass -------------------------------------------------------------

def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def swiglu(x, gate, up, down):
    return (torch.nn.functional.silu(x @ gate.T) * (x @ up.T)) @ down.T


def mixtral_block(c, w, p, m):
    """MixtralSparseMoeBlock: softmax over the router's logits, top-k, renormalized to sum 1, then
    the chosen experts' w2(silu(w1 x) * w3 x) weighted by those probabilities."""
    probs = torch.softmax(m @ w[p + "gate.weight"].T, dim=-1)
    top_p, top_e = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
    top_p = top_p / top_p.sum(-1, keepdim=True)
    y = torch.zeros_like(m)
    for tok in range(m.shape[0]):
        for slot in range(top_e.shape[1]):
            e = p + f"experts.{int(top_e[tok, slot])}."
            x = m[tok:tok + 1]
            act = torch.nn.functional.silu(x @ w[e + "w1.weight"].T) * (x @ w[e + "w3.weight"].T)
            y[tok] += top_p[tok, slot] * (act @ w[e + "w2.weight"].T)[0]
    return y


def reference_logits(c, w, ids):
    """Logits [T, V] of token ids `ids` (one sequence, positions 0..T-1), in float64."""
    w = {k: v.to(torch.float64) for k, v in w.items()}
    arch = c["architectures"][0]
    h, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    d = c.get("head_dim", h // heads)
    eps, theta = c["rms_norm_eps"], c["rope_theta"]
    t = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]  # [T, H]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)  # [T, D/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()  # [T, D]
    causal = torch.full((t, t), float("-inf"), dtype=torch.float64).triu(1)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = a @ w[p + "self_attn.q_proj.weight"].T
        k = a @ w[p + "self_attn.k_proj.weight"].T
        v = a @ w[p + "self_attn.v_proj.weight"].T
        if arch in QWEN2_LIKE:
            q = q + w[p + "self_attn.q_proj.bias"]
            k = k + w[p + "self_attn.k_proj.bias"]
            v = v + w[p + "self_attn.v_proj.bias"]
        q = q.view(t, heads, d).transpose(0, 1)  # [heads, T, D]
        k = k.view(t, kv, d).transpose(0, 1)
        v = v.view(t, kv, d).transpose(0, 1)
        if arch not in NO_QK_NORM:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # Grouped-query attention: query head j reads key/value head j // (heads / kv).
        k = k.repeat_interleave(heads // kv, dim=0)
        v = v.repeat_interleave(heads // kv, dim=0)
        scores = q @ k.transpose(1, 2) / math.sqrt(d) + causal
        o = torch.softmax(scores, dim=-1) @ v  # [heads, T, D]
        o = o.transpose(0, 1).reshape(t, heads * d)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if arch == "MixtralForCausalLM":
            y = mixtral_block(c, w, p + "block_sparse_moe.", m)
        elif is_moe_layer(c, i):
            probs = torch.softmax(m @ w[p + "mlp.gate.weight"].T, dim=-1)  # [T, E]
            top_p, top_e = torch.topk(probs, c["num_experts_per_tok"], dim=-1)
            if c.get("norm_topk_prob", False):
                top_p = top_p / top_p.sum(-1, keepdim=True)
            y = torch.zeros_like(m)
            for tok in range(t):
                for slot in range(top_e.shape[1]):
                    e = int(top_e[tok, slot])
                    q_ = p + f"mlp.experts.{e}."
                    y[tok] += top_p[tok, slot] * swiglu(
                        m[tok:tok + 1], w[q_ + "gate_proj.weight"], w[q_ + "up_proj.weight"],
                        w[q_ + "down_proj.weight"])[0]
        else:
            y = swiglu(m, w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"],
                       w[p + "mlp.down_proj.weight"])
        x = x + y
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight" if c.get("tie_word_embeddings") else "lm_head.weight"]
    return x @ head.T


# ---- the check --------------------------------------------------------------------------------

def check(trainer, work):
    failed = False
    for name in CASES:
        out_dir = Path(work) / name
        weights = write_case(name, out_dir)
        ref = reference_logits(CASES[name]["config"], weights, IDS)
        run = subprocess.run([trainer, "forward", "--model", str(out_dir.resolve()), "--ids",
                              ",".join(map(str, IDS))], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{name}: grpo-trainer forward exited {run.returncode}: {run.stderr.strip()}")
            failed = True
            continue
        got = torch.tensor(json.loads(run.stdout)["logits"], dtype=torch.float64)
        if got.shape != ref.shape:
            print(f"{name}: logits of shape {list(got.shape)}, expected {list(ref.shape)}")
            failed = True
            continue
        diff = (got - ref).abs().max().item()
        ok = diff <= TOLERANCE
        failed |= not ok
        print(f"{name}: max |logit diff| = {diff:.3e} over {ref.numel()} logits "
              f"(|logits| up to {ref.abs().max().item():.2f}) {'ok' if ok else 'FAIL'}")
    return 1 if failed else 0


def one_line_error(name, args, expect):
    """`args` must fail with exit 2 and one stderr line containing `expect`."""
    run = subprocess.run(args, capture_output=True, text=True)
    lines = [l for l in run.stderr.splitlines() if l.strip()]
    ok = run.returncode == 2 and len(lines) == 1 and expect in lines[0]
    print(f"{name}: exit {run.returncode}, {lines[-1] if lines else '(no stderr)'} "
          f"{'ok' if ok else 'FAIL (want exit 2 and one line with ' + repr(expect) + ')'}")
    return ok


def write_raw(path, header, data):
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def check_errors(trainer, work):
    """Bad checkpoints: one line naming the problem, exit 2, from `forward` and from training."""
    base = Path(work) / "errors"
    good = CASES["qwen3-tied"]
    ok = True

    def fresh(name):
        d = (base / name).resolve()
        write_case("qwen3-tied", d)
        return d, random_weights(good["config"], "F32", 1)

    def forward(d):
        return [trainer, "forward", "--model", str(d), "--ids", "1,2,3"]

    d, w = fresh("truncated")
    st = d / "model.safetensors"
    st.write_bytes(st.read_bytes()[:-10])
    ok &= one_line_error("truncated file", forward(d), "truncated")
    d, w = fresh("header-past-end")
    st = d / "model.safetensors"
    st.write_bytes(struct.pack("<Q", 1 << 20) + st.read_bytes()[8:])
    ok &= one_line_error("header past the end", forward(d), "past the end")
    d, w = fresh("missing")
    del w["model.norm.weight"]
    write_safetensors(d / "model.safetensors", w, "F32")
    ok &= one_line_error("missing tensor", forward(d), "lacks tensor model.norm.weight")
    d, w = fresh("extra")
    w["model.layers.7.mlp.up_proj.weight"] = torch.zeros(2, 2)
    write_safetensors(d / "model.safetensors", w, "F32")
    ok &= one_line_error("unexpected tensor", forward(d), "model.layers.7.mlp.up_proj.weight")
    d, w = fresh("shape")
    w["model.layers.1.mlp.up_proj.weight"] = torch.zeros(95, 64)
    write_safetensors(d / "model.safetensors", w, "F32")
    ok &= one_line_error("shape mismatch", forward(d), "has shape [95, 64]")
    d, w = fresh("dtype")
    write_raw(d / "model.safetensors",
              {"model.norm.weight": {"dtype": "I64", "shape": [8], "data_offsets": [0, 64]}},
              bytes(64))
    ok &= one_line_error("unsupported dtype", forward(d), "I64")
    d, w = fresh("index-missing-shard")
    (d / "model.safetensors").unlink()
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {k: "model-00001-of-00001.safetensors" for k in w}}))
    ok &= one_line_error("index names a missing shard", forward(d),
                         "model-00001-of-00001.safetensors")
    d, w = fresh("arch")
    cfg = dict(good["config"], architectures=["GPT2LMHeadModel"])
    (d / "config.json").write_text(json.dumps(cfg))
    ok &= one_line_error("unknown architecture", forward(d), "GPT2LMHeadModel")

    def family(name, case, **changes):
        d = (base / name).resolve()
        w = write_case(case, d)
        (d / "config.json").write_text(json.dumps(dict(CASES[case]["config"], **changes)))
        return d, w

    # A window shorter than the sequence (3 tokens) is not full attention: refused, not run.
    d, w = family("window", "mistral-window", sliding_window=2)
    ok &= one_line_error("sliding window shorter than the sequence", forward(d),
                         "window 2 tokens")
    d, w = family("rope", "llama-tied", rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64})
    ok &= one_line_error("rope scaling", forward(d), "rope scaling 'llama3'")
    # Mixtral's tensors under Qwen3-MoE's names: the first file tensor it does not know.
    d, w = family("mixtral-names", "mixtral-sharded")
    for f in d.glob("model*.safetensors*"):
        f.unlink()
    renamed = {k.replace("block_sparse_moe.", "mlp.").replace(".w1.", ".gate_proj.")
               .replace(".w3.", ".up_proj.").replace(".w2.", ".down_proj."): v
               for k, v in w.items()}
    write_safetensors(d / "model.safetensors", renamed, "F32")
    ok &= one_line_error("Mixtral under Qwen names", forward(d), "unexpected tensor model.layers.")
    d, w = fresh("train-missing")
    del w["model.embed_tokens.weight"]
    write_safetensors(d / "model.safetensors", w, "F32")
    run_dir = base / "train-missing-run"
    ok &= one_line_error("missing tensor when training",
                         [trainer, "--model", str(d), "--run-dir", str(run_dir),
                          "--log-level", "error"] + TRAIN_SETTINGS,
                         "lacks tensor model.embed_tokens.weight")
    return 0 if ok else 1


# A few SFT + GRPO steps of the built-in task (tests/trainer/process_helpers.h: fast_args).
TRAIN_SETTINGS = [a for kv in [
    "trainer.sft_warmup_steps=2", "trainer.total_training_steps=3", "trainer.sft_batch_size=8",
    "data.train_batch_size=4", "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "data.val_size=8",
    "data.train_size=64", "trainer.test_freq=-1", "trainer.threads=1"] for a in ("--set", kv)]


def check_train_one_rank(trainer, work):
    d = (Path(work) / "train" / "qwen3moe-sharded").resolve()
    write_case("qwen3moe-sharded", d)
    n = len(parameter_shapes(CASES["qwen3moe-sharded"]["config"]))
    run = subprocess.run([trainer, "--model", str(d), "--run-dir", str(d.parent / "run"),
                          "--resume", "none", "--log-level", "info"] + TRAIN_SETTINGS,
                         capture_output=True, text=True)
    # One rank holds (and reads) every tensor (hf_weights.cpp's log line).
    loaded = f"rank 0: loaded {n} of {n} tensors from the Hugging Face checkpoint" in run.stderr
    events = [json.loads(l) for l in run.stdout.splitlines() if l.startswith("{")]
    steps = sum(1 for e in events if e.get("type") == "step")
    ok = run.returncode == 0 and loaded and steps == 5  # 2 SFT + 3 GRPO steps
    print(f"training from qwen3moe-sharded: exit {run.returncode}, {n} tensors loaded: {loaded}, "
          f"{steps} step events {'ok' if ok else 'FAIL'}")
    if not ok:
        print(run.stderr[-3000:])
    return next((e for e in events if e.get("type") == "step"), None) if ok else None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_step(trainer, model_dir, run_dir, ep):
    """Step 1 of a 2-rank run (torchrun variables) at expert parallelism `ep`: rank 0's event."""
    import os
    port = free_port()
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.pop("PMIX_NAMESPACE", None)
        args = [trainer, "--model", str(model_dir), "--run-dir", str(run_dir), "--resume", "none",
                "--log-level", "error"] + TRAIN_SETTINGS + [
                "--set", "trainer.total_training_steps=0", "--set", "trainer.sft_warmup_steps=1",
                "--set", f"actor_rollout_ref.actor.megatron.expert_model_parallel_size={ep}"]
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=240) for p in procs]
    if any(p.returncode != 0 for p in procs):
        print(f"EP={ep}: exits {[p.returncode for p in procs]}: {outs[0][1][-2000:]}")
        return None
    events = [json.loads(l) for l in outs[0][0].splitlines() if l.startswith("{")]
    return next(e for e in events if e.get("type") == "step")


def check_train(trainer, work):
    """1 rank: training starts from the checkpoint's weights (the log says so) and runs to the end.
    2 ranks: step 1's loss equals the 1-rank run's (same global batch, same loaded weights), and
    with the experts split over the ranks (EP=2, each rank holds 3 of 6) step 1's loss, router
    aux loss and gradient norm equal plain data parallelism's (EP=1) within 1e-5: every rank got
    its share of the checkpoint through scatter_full."""
    one = check_train_one_rank(trainer, work)
    d = (Path(work) / "train" / "qwen3moe-sharded").resolve()
    a = first_step(trainer, d, d.parent / "run-ep1", 1)
    b = first_step(trainer, d, d.parent / "run-ep2", 2)
    if one is None or a is None or b is None:
        return 1
    # The same global batch on the same (loaded) weights: the 1-rank loss, which a rank that kept
    # its random initialization would not reproduce.
    ok = abs(one["sft_loss"] - a["sft_loss"]) <= TOLERANCE
    print(f"step 1 sft_loss: 1 rank {one['sft_loss']:.7f}, 2 ranks {a['sft_loss']:.7f} "
          f"{'ok' if ok else 'FAIL'}")
    for key in ("sft_loss", "aux_loss", "grad_norm"):
        diff = abs(a[key] - b[key])
        good = diff <= TOLERANCE
        ok &= good
        print(f"2 ranks, step 1 {key}: EP=1 {a[key]:.7f}, EP=2 {b[key]:.7f}, |diff| {diff:.2e} "
              f"{'ok' if good else 'FAIL'}")
    return 0 if ok else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "check-errors":
        return check_errors(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "check-train":
        return check_train(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "write" and argv[2] in CASES:
        write_case(argv[2], argv[3])
        return 0
    print(__doc__, file=sys.stderr)
    print("cases: " + ", ".join(CASES), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
