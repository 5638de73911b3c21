# Context windows and prompt-caching knobs through the engine (no sockets): a request over its
# model's window gets `context_length_exceeded` with `truncation: disabled` and loses its oldest
# items with `auto`; `prompt_cache_key` routing; the prefix cache's retention and TTLs (on given
# clock readings) and explicit breakpoints (`prompt_cache_options.mode`, `prompt_cache_breakpoint`).
from __future__ import annotations

import random
from typing import Any

import pytest

from protocol import codec
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.items import InputText, Message
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.model.inference import MIN_CACHED_PROMPT, CacheOptions, PrefixCache, cache_hit
from rollout.model.policy import ScriptedPolicy, search, sentence, text
from rollout.model.profiles import CACHE_TTL_S, ModelProfile

TINY = {"tiny": ModelProfile(name="tiny", context_window=300)}


async def drive(engine: Engine, body: dict[str, Any]) -> Prepared:
    async def emit(event: Event) -> None:
        del event

    prepared = await engine.prepare(codec.decode_create(body), Work(), emit)
    await engine.run(prepared, EndResponse())
    return prepared


def words(n: int, seed: int = 0) -> str:
    return sentence(random.Random(seed), n)


def history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": words(40, i)})
        out.append({"role": "assistant", "content": words(40, 100 + i)})
    return [*out, {"role": "user", "content": "And now?"}]


async def test_over_the_window_is_context_length_exceeded() -> None:
    engine = Engine(policy=ScriptedPolicy([text("ok")]), models=TINY)
    with pytest.raises(ProtocolError) as exc:
        await drive(engine, {"model": "tiny", "input": history(6)})
    assert (exc.value.code, exc.value.param, exc.value.status) == (
        "context_length_exceeded",
        "input",
        400,
    )


async def test_auto_truncation_drops_the_oldest_items() -> None:
    engine = Engine(policy=ScriptedPolicy([text("ok")]), models=TINY)
    prepared = await drive(engine, {"model": "tiny", "input": history(6), "truncation": "auto"})
    response = prepared.rollout.stream.response
    assert response.status == "completed" and response.truncation == "auto"
    assert response.usage is not None and response.usage.input_tokens <= 300
    kept = [i for i in prepared.rollout.ctx.items if isinstance(i, Message)]
    assert len(kept) < 13
    assert isinstance(kept[-1], Message) and kept[-2].role == "user"  # the newest stay


async def test_a_model_not_in_the_table_has_a_128k_window() -> None:
    engine = Engine(policy=ScriptedPolicy([text("ok")]), models=TINY)
    prepared = await drive(engine, {"model": "other", "input": history(6)})
    assert prepared.rollout.window == 128_000


async def test_prompt_cache_key_keeps_a_conversation_on_one_engine() -> None:
    engine = Engine()
    work = Work()
    routes = {(await engine.route("m", work, "conv-1", prefix)).engine for prefix in range(8)}
    assert len(routes) <= 8
    same = {(await engine.route("m", work, "conv-1", 42)).engine for _ in range(3)}
    assert len(same) == 1
    spread = {(await engine.route("m", work, f"conv-{i}", 42)).engine for i in range(32)}
    assert len(spread) > 1


def long_context(breakpoint: dict[str, Any] | None = None, tail: int = 0) -> Context:
    ctx = Context()
    first = Message(
        role="user",
        content=(InputText(text=words(1200), prompt_cache_breakpoint=breakpoint),),
    )
    second = Message(role="user", content=(InputText(text=words(200, seed=7 + tail)),))
    ctx.extend([first, second], Work())
    assert ctx.token_count >= MIN_CACHED_PROMPT
    return ctx


def test_in_memory_retention_expires_and_24h_does_not() -> None:
    for retention, hit_after in (("in_memory", False), ("24h", True)):
        cache = PrefixCache()
        options = CacheOptions.of(retention, None)
        ctx = long_context()
        assert cache_hit(ctx, "e", cache, options, now=0.0) == 0
        later = CACHE_TTL_S["in_memory"] + 1
        assert (cache_hit(ctx, "e", cache, options, now=later) > 0) is hit_after


def test_a_hit_refreshes_the_entry() -> None:
    cache, options, ctx = PrefixCache(), CacheOptions.of("in_memory", None), long_context()
    ttl = CACHE_TTL_S["in_memory"]
    for step in range(4):
        cached = cache_hit(ctx, "e", cache, options, now=step * (ttl - 1))
        assert (cached > 0) is (step > 0)


def test_options_ttl_sets_the_lifetime() -> None:
    cache, ctx = PrefixCache(), long_context()
    options = CacheOptions.of(None, {"ttl": "30m"})
    cache_hit(ctx, "e", cache, options, now=0.0)
    assert cache_hit(ctx, "e", cache, options, now=CACHE_TTL_S["30m"] - 1) > 0
    assert cache_hit(long_context(), "e", cache, options, now=3 * CACHE_TTL_S["30m"]) == 0


def test_explicit_mode_without_breakpoints_does_not_cache() -> None:
    cache, ctx = PrefixCache(), long_context()
    options = CacheOptions.of(None, {"mode": "explicit"})
    assert cache_hit(ctx, "e", cache, options, now=0.0) == 0
    assert cache_hit(ctx, "e", cache, options, now=1.0) == 0


@pytest.mark.parametrize("mode", ["explicit", "implicit"])
def test_an_explicit_breakpoint_hits_exactly_where_it_is(mode: str) -> None:
    cache = PrefixCache()
    options = CacheOptions.of(None, {"mode": mode})
    first = long_context({"mode": "explicit"})
    [(position, ttl)] = first.breakpoints
    assert ttl is None and position % 128 != 0
    cache_hit(first, "e", cache, options, now=0.0)
    other_tail = long_context({"mode": "explicit"}, tail=1)  # same prefix, a different end
    assert cache_hit(other_tail, "e", cache, options, now=1.0) == position


async def test_a_response_that_outgrows_the_window_fails_or_truncates() -> None:
    searches = [search(f"query {i} about the weather in several cities") for i in range(6)]
    body = {"model": "tiny", "input": history(2)}
    engine = Engine(policy=ScriptedPolicy([*searches, text("ok")]), models=TINY)
    prepared = await drive(engine, body)
    response = prepared.rollout.stream.response
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "context_length_exceeded"
    engine = Engine(policy=ScriptedPolicy([*searches, text("ok")]), models=TINY)
    prepared = await drive(engine, {**body, "truncation": "auto"})
    assert prepared.rollout.stream.response.status == "completed"
    assert prepared.rollout.ctx.token_count <= 300 + 64
