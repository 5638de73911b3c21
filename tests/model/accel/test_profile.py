# The accelerator profiles' figures (rollout.model.accel.profile): the KV cache a model's
# dimensions and an accelerator's memory leave, and the roofline step times: a decode step is
# memory-bound and grows with the batch and its context, a long prefill is compute-bound.
from __future__ import annotations

import math

import attrs
import pytest

from rollout.model.accel.profile import (
    DEFAULT_ENGINE,
    ENGINE_PROFILES,
    GIB,
    EngineProfileError,
    engine_profile,
)

H100_8B = ENGINE_PROFILES["h100-llama3.1-8b"]


def test_kv_bytes_per_token_of_llama_8b() -> None:
    # K and V x 32 layers x 8 KV heads x 128 dims x 2 bytes (BF16).
    assert H100_8B.kv_bytes_per_token == 131072
    assert ENGINE_PROFILES["4xh100-llama3.1-70b"].kv_bytes_per_token == 2 * 80 * 8 * 128 * 2


def test_kv_blocks_follow_from_the_memory() -> None:
    # 79.2 GiB x 0.9 less 16.06 GB of weights and 4 GiB reserved: about 52.3 GiB of KV, in
    # blocks of 16 tokens x 128 KiB = 2 MiB.
    assert H100_8B.kv_bytes / GIB == pytest.approx(52.32, abs=0.01)
    assert H100_8B.kv_blocks == 26789  # 56.18e9 bytes / 2 MiB
    assert H100_8B.kv_tokens == 26789 * 16
    # Another 10 GiB of memory adds 9 GiB of KV (the utilisation applies): 4608 blocks of 2 MiB.
    bigger = attrs.evolve(H100_8B, memory_gib=H100_8B.memory_gib + 10)
    assert bigger.kv_blocks - H100_8B.kv_blocks in (4608, 4609)
    # Bigger blocks: as many tokens, fewer blocks.
    coarse = attrs.evolve(H100_8B, block_size=32)
    assert coarse.kv_blocks == H100_8B.kv_blocks // 2
    # Weights that do not fit leave nothing.
    small = attrs.evolve(H100_8B, memory_gib=16)
    assert small.kv_bytes == 0 and small.kv_blocks == 0


def test_host_tokens() -> None:
    assert H100_8B.host_tokens == 256 * GIB // 131072
    assert attrs.evolve(H100_8B, host_memory_gib=0).host_tokens == 0


def test_decode_step_grows_with_batch_and_context() -> None:
    one = H100_8B.decode_seconds(1, 1024)
    batch = H100_8B.decode_seconds(64, 1024)
    long = H100_8B.decode_seconds(64, 16_384)
    assert one < batch < long
    # One sequence reads the weights once: about 16.06 GB / (3350 GB/s x 0.8) + 1.5 ms.
    assert one == pytest.approx(0.0015 + (8.03e9 * 2 + 1024 * 131072) / (3350e9 * 0.8))
    # 64 sequences of 16k: another 64 x 16k x 128 KiB = 137 GB of KV to read.
    assert long - one == pytest.approx((64 * 16_384 - 1024) * 131072 / (3350e9 * 0.8), rel=1e-6)
    # Decoding more sequences per step costs far less than one step each.
    assert batch < 2 * one


def test_prefill_of_8k_is_compute_bound() -> None:
    tokens = 8192
    flops = 2 * 8.03e9 * tokens + 4 * 32 * 4096 * tokens * (tokens + 1) / 2
    compute_s = flops / (989e12 * 0.55)
    memory_s = (8.03e9 * 2 + tokens * 131072) / (3350e9 * 0.8)
    assert compute_s > 10 * memory_s
    assert H100_8B.prefill_seconds(tokens) == pytest.approx(0.0015 + compute_s)
    # Chunked: 16k tokens take two steps of 8192, the second attending to the first's KV.
    two = H100_8B.prefill_seconds(2 * tokens)
    assert two > 2 * H100_8B.prefill_seconds(tokens)
    assert two == pytest.approx(
        H100_8B.prefill_seconds(tokens) + H100_8B.prefill_seconds(tokens, context=tokens)
    )


def test_step_of_nothing_takes_no_time() -> None:
    assert H100_8B.step_seconds(0, 0, 0) == 0.0
    assert H100_8B.prefill_seconds(0) == 0.0


def test_offload_copy_time() -> None:
    # 1000 tokens x 128 KiB over 25 GB/s.
    assert H100_8B.offload_seconds(1000) == pytest.approx(1000 * 131072 / 25e9)
    assert math.isinf(attrs.evolve(H100_8B, host_bandwidth_gbs=0).offload_seconds(1))


def test_engine_profile_by_name() -> None:
    assert engine_profile(DEFAULT_ENGINE) is H100_8B
    with pytest.raises(
        EngineProfileError, match=r"unknown engine profile 'tpu'.*h100-llama3\.1-8b"
    ):
        engine_profile("tpu")
    assert issubclass(EngineProfileError, ValueError)


def test_describe_prints_declared_and_derived_figures() -> None:
    lines = H100_8B.describe()
    assert lines[0] == "engine h100-llama3.1-8b: Llama-3.1-8B (BF16) on 1x H100 SXM 80GB"
    assert "KV 128 KiB/token, 26789 blocks = 428624 tokens" in lines[2]
