# Named accelerator profiles of the shared engine (`--engine NAME`): a model's dimensions on an
# accelerator, from which the KV memory (blocks of `block_size` tokens in the memory left after
# the weights) and the time of one continuous-batching step follow by a roofline: a step reads
# the weights once and the KV of every sequence in the batch, and does two FLOPs per parameter
# per token plus attention; it takes the longer of the two at declared efficiencies, plus a
# fixed per-step overhead. Every figure is a declared field here, printed with every result; the
# published figures each one comes from are in docs/shared-engine.md.
from __future__ import annotations

import math

import attrs

GIB = 1 << 30


@attrs.frozen(kw_only=True)
class AcceleratorProfile:
    name: str
    model: str  # the model the dimensions are of
    accelerator: str
    params: float  # parameters
    layers: int
    hidden: int  # model width (attention FLOPs)
    kv_heads: int
    head_dim: int
    dtype_bytes: int = 2  # BF16 weights and KV cache
    memory_gib: float  # accelerator memory (all devices of the engine)
    memory_utilization: float = 0.9  # vLLM's gpu_memory_utilization
    reserved_gib: float = 0.0  # activations, CUDA graphs, workspace: not weights, not KV
    bandwidth_gbs: float  # HBM bandwidth, GB/s (all devices)
    peak_tflops: float  # dense BF16 TFLOPS (all devices)
    memory_efficiency: float = 0.8  # fraction of the bandwidth a step's reads reach
    compute_efficiency: float = 0.5  # fraction of the peak a step's FLOPs reach (MFU)
    step_overhead_s: float = 0.0  # per step: scheduling, sampling, kernel launches
    block_size: int = 16  # tokens per KV block (vLLM's default)
    max_num_seqs: int = 1024  # sequences in one batch (vLLM V1's API server on an H100)
    max_batched_tokens: int = 8192  # tokens per step: decodes plus prefill chunks (the same)
    host_memory_gib: float = 0.0  # host memory for offloaded KV (`--kv-policy offload`)
    host_bandwidth_gbs: float = 0.0  # device<->host copies, GB/s
    source: str = ""

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer for one token."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def weights_bytes(self) -> float:
        return self.params * self.dtype_bytes

    @property
    def kv_bytes(self) -> float:
        """Memory for the KV cache: the usable share of the memory less weights and reserve."""
        usable = self.memory_gib * GIB * self.memory_utilization
        return max(0.0, usable - self.weights_bytes - self.reserved_gib * GIB)

    @property
    def kv_blocks(self) -> int:
        return int(self.kv_bytes // (self.kv_bytes_per_token * self.block_size))

    @property
    def kv_tokens(self) -> int:
        return self.kv_blocks * self.block_size

    @property
    def host_tokens(self) -> int:
        return int(self.host_memory_gib * GIB // self.kv_bytes_per_token)

    def step_seconds(self, tokens: int, kv_read_tokens: int, attention_pairs: float) -> float:
        """One step of `tokens` new tokens (one per decoding sequence plus prefill chunks) that
        reads the KV of `kv_read_tokens` tokens and computes `attention_pairs` query-key pairs."""
        if tokens <= 0:
            return 0.0
        read = self.weights_bytes + kv_read_tokens * self.kv_bytes_per_token
        memory_s = read / (self.bandwidth_gbs * 1e9 * self.memory_efficiency)
        flops = 2 * self.params * tokens + 4 * self.layers * self.hidden * attention_pairs
        compute_s = flops / (self.peak_tflops * 1e12 * self.compute_efficiency)
        return self.step_overhead_s + max(memory_s, compute_s)

    def decode_seconds(self, batch: int, context: int) -> float:
        """A decode step of `batch` sequences of `context` tokens each."""
        return self.step_seconds(batch, batch * context, batch * context)

    def prefill_seconds(self, tokens: int, context: int = 0) -> float:
        """Prefill of `tokens` new tokens after `context` cached ones, in steps of at most
        `max_batched_tokens` (chunked prefill), alone on the engine."""
        total, done = 0.0, 0
        while done < tokens:
            chunk = min(self.max_batched_tokens, tokens - done)
            before = context + done
            pairs = chunk * before + chunk * (chunk + 1) / 2
            total += self.step_seconds(chunk, before + chunk, pairs)
            done += chunk
        return total

    def offload_seconds(self, tokens: int) -> float:
        """Copying the KV of `tokens` tokens between device and host memory."""
        if self.host_bandwidth_gbs <= 0:
            return math.inf
        return tokens * self.kv_bytes_per_token / (self.host_bandwidth_gbs * 1e9)

    def describe(self) -> list[str]:
        """The profile as printed with results: declared figures, then what follows from them."""
        return [
            f"engine {self.name}: {self.model} on {self.accelerator}",
            f"  declared: {self.params / 1e9:g}B params, {self.layers} layers, {self.kv_heads} KV "
            f"heads x {self.head_dim}, {self.dtype_bytes} B/value; {self.memory_gib:g} GiB at "
            f"{self.memory_utilization:g} utilisation, {self.reserved_gib:g} GiB reserved; "
            f"{self.bandwidth_gbs:g} GB/s x {self.memory_efficiency:g}, {self.peak_tflops:g} "
            f"TFLOPS x {self.compute_efficiency:g}, {self.step_overhead_s * 1000:g} ms/step; "
            f"blocks of {self.block_size}, <= {self.max_num_seqs} seqs and "
            f"{self.max_batched_tokens} tokens/step; host {self.host_memory_gib:g} GiB at "
            f"{self.host_bandwidth_gbs:g} GB/s",
            f"  derived: KV {self.kv_bytes_per_token // 1024} KiB/token, {self.kv_blocks} blocks "
            f"= {self.kv_tokens} tokens; decode 1 seq {self.decode_seconds(1, 1024) * 1000:.1f} "
            f"ms/step, 64 x 16k {self.decode_seconds(64, 16_384) * 1000:.1f} ms/step; prefill "
            f"8k {self.prefill_seconds(8192) * 1000:.0f} ms",
        ]


ENGINE_PROFILES: dict[str, AcceleratorProfile] = {
    p.name: p
    for p in (
        AcceleratorProfile(
            name="h100-llama3.1-8b",
            model="Llama-3.1-8B (BF16)",
            accelerator="1x H100 SXM 80GB",
            params=8.03e9,
            layers=32,
            hidden=4096,
            kv_heads=8,
            head_dim=128,
            memory_gib=79.2,
            reserved_gib=4.0,
            bandwidth_gbs=3350,
            peak_tflops=989,
            memory_efficiency=0.8,
            compute_efficiency=0.55,
            step_overhead_s=0.0015,
            host_memory_gib=256,
            host_bandwidth_gbs=25,
            source="Llama 3.1 model card (dimensions); NVIDIA H100 SXM datasheet (3.35 TB/s, "
            "989 dense BF16 TFLOPS); vLLM V1 defaults on an H100 (block 16, 1024 seqs, 8192 "
            "tokens/step); checked against vLLM's median TPOT of 7.56 ms for Llama-3-8B on one "
            "H100 (10 requests at once; ours: 7.5 ms for one)",
        ),
        AcceleratorProfile(
            name="4xh100-llama3.1-70b",
            model="Llama-3.1-70B (BF16)",
            accelerator="4x H100 SXM 80GB, tensor parallel",
            params=70.6e9,
            layers=80,
            hidden=8192,
            kv_heads=8,
            head_dim=128,
            memory_gib=4 * 79.2,
            reserved_gib=4 * 4.0,
            bandwidth_gbs=4 * 3350,
            peak_tflops=4 * 989,
            memory_efficiency=0.7,
            compute_efficiency=0.45,
            step_overhead_s=0.003,
            host_memory_gib=1024,
            host_bandwidth_gbs=4 * 25,
            source="Llama 3.1 model card; NVIDIA H100 SXM datasheet; efficiencies lower than "
            "one device's for tensor-parallel all-reduces",
        ),
    )
}
DEFAULT_ENGINE = "h100-llama3.1-8b"


class EngineProfileError(ValueError):
    pass


def engine_profile(name: str) -> AcceleratorProfile:
    try:
        return ENGINE_PROFILES[name]
    except KeyError:
        known = ", ".join(ENGINE_PROFILES)
        raise EngineProfileError(f"unknown engine profile {name!r} (known: {known})") from None
