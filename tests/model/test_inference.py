# Simulated inference (rollout.model.inference) through the engine: prefix caching (a repeated long
# prompt reports `cached_tokens` in 128-token steps, short prompts never do, the cache is per
# engine) and pacing by an InferenceProfile (TTFT + prefill of uncached tokens + decode at a set
# tokens/s), measured on trio's autojump MockClock, so nothing really waits.
import random
from typing import Any

import attrs
import orjson
import pytest
import trio

from protocol import codec
from protocol.events import Event
from protocol.response import Response, Usage
from rollout.conversation import tokens as tok
from rollout.conversation.blocks import BLOCK
from rollout.conversation.context import Context, Route
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.model import inference
from rollout.model.inference import (
    MIN_CACHED_PROMPT,
    UNPACED,
    Pacer,
    PrefixCache,
    pacer_of,
    token_deltas,
)
from rollout.model.policy import ScriptedPolicy, TextStep, sentence
from rollout.model.profiles import InferenceProfile

# -- harness ------------------------------------------------------------------------------------


@attrs.define
class Ran:
    prepared: Prepared
    events: list[Event]
    times: list[float]  # trio.current_time() at each event
    prepared_at: float

    @property
    def response(self) -> Response:
        return self.prepared.rollout.stream.response

    @property
    def usage(self) -> Usage:
        usage = self.response.usage
        assert usage is not None
        return usage

    @property
    def ctx(self) -> Context:
        return self.prepared.rollout.ctx

    def first(self, type_: str) -> float:
        return next(t for e, t in zip(self.events, self.times, strict=True) if e.type == type_)


async def drive(engine: Engine, body: dict[str, Any], **kw: Any) -> Ran:
    events: list[Event] = []
    times: list[float] = []

    async def emit(event: Event) -> None:
        events.append(event)
        times.append(trio.current_time())

    prepared = await engine.prepare(codec.decode_create(body), Work(), emit, **kw)
    ran = Ran(prepared, events, times, trio.current_time())
    await engine.run(prepared, EndResponse())
    return ran


def long_prompt(tokens: int, seed: int = 0) -> str:
    return sentence(random.Random(seed), tokens)


def answering(answer: str = "Fine.", **engine: Any) -> Engine:
    return Engine(policy=ScriptedPolicy(lambda ctx: TextStep(text=answer)), **engine)


# -- prefix caching -----------------------------------------------------------------------------


async def test_repeated_long_prompt_hits_the_cache() -> None:
    engine = answering()
    request = {"model": "m", "instructions": "Be brief.", "input": long_prompt(1500)}
    first = await drive(engine, request)
    assert first.usage.input_tokens > MIN_CACHED_PROMPT
    assert first.usage.input_tokens_details.cached_tokens == 0

    second = await drive(engine, request)
    cached = second.usage.input_tokens_details.cached_tokens
    assert second.usage.input_tokens == first.usage.input_tokens
    assert cached > 0
    assert cached % BLOCK == 0
    assert cached <= second.usage.input_tokens
    assert cached == second.usage.input_tokens // BLOCK * BLOCK  # every full block was sent


async def test_short_prompt_never_hits_the_cache() -> None:
    engine = answering()
    request = {"model": "m", "input": long_prompt(600)}
    for _ in range(3):
        ran = await drive(engine, request)
        assert BLOCK < ran.usage.input_tokens < MIN_CACHED_PROMPT
        assert ran.usage.input_tokens_details.cached_tokens == 0


async def test_cache_is_per_engine() -> None:
    engine = answering()
    request = {"model": "m", "input": long_prompt(1500)}
    await drive(engine, request, route=Route(model="m", engine="e1"))
    other = await drive(engine, request, route=Route(model="m", engine="e2"))
    assert other.usage.input_tokens_details.cached_tokens == 0
    same = await drive(engine, request, route=Route(model="m", engine="e1"))
    assert same.usage.input_tokens_details.cached_tokens > 0


async def test_continuation_hits_the_previous_prompt() -> None:
    engine = answering("A reasonably short answer.")
    first = await drive(engine, {"model": "m", "input": long_prompt(1500)})
    body = {"model": "m", "input": "And then?", "previous_response_id": first.response.id}
    second = await drive(engine, body)
    cached = second.usage.input_tokens_details.cached_tokens
    assert first.usage.input_tokens // BLOCK * BLOCK == cached
    assert cached < second.usage.input_tokens


def test_prefix_cache_lookup_counts_the_leading_blocks() -> None:
    # Block hashes are chained, so a prompt that differs early differs in every later hash.
    cache = PrefixCache()
    cache.insert("e", [1, 2, 3], 0)
    assert cache.lookup("e", [1, 2, 3, 4]) == 3
    assert cache.lookup("e", [1, 2, 9, 10]) == 2
    assert cache.lookup("e", [9, 10, 11]) == 0
    assert cache.lookup("other", [1, 2, 3]) == 0
    assert cache.lookup("e", []) == 0


def test_prefix_cache_capacity_evicts_oldest() -> None:
    cache = PrefixCache(capacity_blocks=2)
    cache.insert("e", [1, 2, 3], 0)
    assert cache.lookup("e", [1]) == 0
    assert cache.lookup("e", [2]) == 1


def test_a_full_prefix_cache_evicts_the_oldest_in_a_batch() -> None:
    cache = PrefixCache(capacity_blocks=1600)
    sizes = []
    for start in range(0, 3200, 100):  # prompts of 100 new blocks each, 2x the capacity
        cache.insert("e", list(range(start, start + 100)), 0)
        sizes.append(cache.size("e"))
    assert sizes[15:18] == [1600, 1500, 1600]  # full, then down to 15/16 in one go
    assert max(sizes) == 1600
    assert cache.lookup("e", list(range(3100, 3200))) == 100  # the newest are held
    assert cache.lookup("e", [0]) == 0  # the oldest went first


# -- pacing (virtual time) ----------------------------------------------------------------------


ANSWER = long_prompt(40, seed=3)


async def test_decode_pace_follows_the_profile(autojump_clock: trio.testing.MockClock) -> None:
    del autojump_clock
    profile = InferenceProfile(name="t", decode_tps=200)
    ran = await drive(answering(ANSWER, inference=profile), {"model": "m", "input": "Go."})
    n = ran.usage.output_tokens
    assert 35 <= n <= 50
    assert n == tok.count(ANSWER)
    end = ran.first("response.completed")
    assert end - ran.prepared_at == pytest.approx(n / 200, abs=1e-6)
    first_delta = ran.first("response.output_text.delta")
    assert first_delta - ran.prepared_at == pytest.approx(1 / 200, abs=1e-6)


async def test_ttft_and_prefill_come_before_the_first_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    del autojump_clock
    profile = InferenceProfile(name="t", ttft_s=0.25, prefill_tps=10_000, decode_tps=200)
    engine = answering(ANSWER, inference=profile)
    request = {"model": "m", "input": long_prompt(1500)}

    first = await drive(engine, request)
    prompt = first.usage.input_tokens
    n = first.usage.output_tokens
    prefill = prompt / 10_000
    assert first.first("response.output_text.delta") - first.prepared_at == pytest.approx(
        0.25 + prefill + 1 / 200, abs=1e-6
    )
    assert first.first("response.completed") - first.prepared_at == pytest.approx(
        0.25 + prefill + n / 200, abs=1e-6
    )

    # The second time only the uncached tail is prefilled.
    second = await drive(engine, request)
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached > 0
    assert second.first("response.completed") - second.prepared_at == pytest.approx(
        0.25 + (prompt - cached) / 10_000 + n / 200, abs=1e-6
    )


async def test_instant_profile_takes_no_time(autojump_clock: trio.testing.MockClock) -> None:
    del autojump_clock
    ran = await drive(answering(ANSWER), {"model": "m", "input": "Go."})
    assert ran.first("response.completed") == ran.prepared_at


async def test_fast_decode_sleeps_in_whole_milliseconds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    del autojump_clock
    profile = InferenceProfile(name="t", decode_tps=4000)  # 0.25 ms a token
    ran = await drive(answering(ANSWER, inference=profile), {"model": "m", "input": "Go."})
    n = ran.usage.output_tokens
    elapsed = ran.first("response.completed") - ran.prepared_at
    assert n / 4000 - 0.001 <= elapsed <= n / 4000 + 1e-6  # never late, at most 1 ms early
    delta_times = {t for e, t in zip(ran.events, ran.times, strict=True) if "delta" in e.type}
    assert len(delta_times) < n  # several tokens share one wake-up


async def test_pacer_uses_trio_time(autojump_clock: trio.testing.MockClock) -> None:
    del autojump_clock
    start = trio.current_time()
    pacer = Pacer(InferenceProfile(name="t", decode_tps=100))
    for _ in range(10):
        await pacer.token()
    assert trio.current_time() - start == pytest.approx(0.1, abs=1e-9)


def test_pieces_rebuild_the_text_and_count_its_tokens() -> None:
    for text in (ANSWER, "日本語 🦜 ok", "", 'say "hi"\n'):
        deltas = token_deltas(text)
        assert "".join(deltas.texts) == text
        assert deltas.tokens == len(tok.encode(text))
        assert sum(deltas.count(i) for i in range(len(deltas))) == deltas.tokens
        assert deltas.plain == (orjson.dumps(text) == b'"' + text.encode() + b'"')


def test_a_long_text_streamed_again_splits_the_same() -> None:
    # (the second split comes from the recent-texts memo; a text of another length, not)
    long = " ".join(f"word{i % 97} 日本" for i in range(2000))
    first = token_deltas(long)
    again = token_deltas(long)
    other = token_deltas(long + " end")
    assert list(again.texts) == list(first.texts) and again.counts == first.counts
    assert "".join(again.texts) == long and "".join(other.texts) == long + " end"
    assert again.tokens == len(tok.encode(long)) and again.plain == first.plain


async def test_an_unpaced_profile_releases_every_token_at_once() -> None:
    """A profile with no decode speed is paced by the one Unpaced (what its Pacer would do)."""
    instant = InferenceProfile(name="t", decode_tps=0)
    for pacer in (pacer_of(instant), Pacer(instant)):
        assert pacer.unpaced
        assert pacer.due(5, trio.current_time()) is None
        await pacer.token(3)
    assert pacer_of(instant) is UNPACED
    assert isinstance(pacer_of(InferenceProfile(name="t", decode_tps=100)), Pacer)


def test_a_short_text_is_split_once_and_kept() -> None:
    """A short text's deltas are remembered (a script streams the same arguments at every run):
    the same split as a fresh one, shared, and the memo is bounded."""
    text = '{"cmd":"step 7"}'
    first = token_deltas(text)
    assert token_deltas(text) is first
    assert first == inference._token_deltas(text)
    assert inference._short_token_deltas.cache_info().maxsize == inference.SHORT_ENTRIES
    long = "word " * (inference.SHORT_CHARS // 5 + 1)
    assert token_deltas(long) == inference._token_deltas(long)
