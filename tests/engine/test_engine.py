# The engine's pre- and post-inference work (rollout.engine.engine), driven without sockets: what a
# request costs (a full-history request renders the whole history, extending a cached context
# renders only the new items; routing once per prepare unless a route is given; billing once per
# run), input checks that refuse a request before the cached context is touched, item
# references, and restoring a chain from the store.
from typing import Any

import pytest

from protocol import codec
from protocol.errors import ProtocolError
from protocol.items import FunctionCall, Item, ItemReference, Message
from rollout.conversation import tokens as tok
from rollout.conversation.context import Context, Route
from rollout.conversation.render import header_tokens, tokens_of
from rollout.model.policy import call, text
from support.drive import drive, prepare, scripted


def words(n: int, seed: int) -> str:
    import random

    from rollout.model.policy import sentence

    return sentence(random.Random(seed), n)


INSTRUCTIONS = "You are a careful assistant."
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris? " + words(200, 1)},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 24C"},
    {"role": "assistant", "content": "It is sunny. " + words(200, 2)},
    {"role": "user", "content": "And in Rome? " + words(50, 3)},
]


def body(input: Any, **fields: Any) -> dict[str, Any]:
    return {"model": "m", "instructions": INSTRUCTIONS, "tools": TOOLS, "input": input, **fields}


def count_rendered(items: list[dict[str, Any]]) -> int:
    decoded = codec.decode_create(body(items)).input
    assert not isinstance(decoded, str)
    return sum(len(tokens_of(i)) for i in decoded)


# -- what a request costs -----------------------------------------------------------------------


async def test_full_history_request_renders_and_scans_the_whole_history() -> None:
    ran = await prepare(scripted(text("ok")), body(HISTORY))
    tokenize, scan = ran.work.counts["tokenize"], ran.work.counts["scan"]
    whole = len(ran.ctx.tokens)
    assert whole == len(header_tokens(INSTRUCTIONS, ran.ctx.tools)) + count_rendered(HISTORY)
    assert ran.ctx.token_count == whole + tok.REPLY_PRIMING  # the prompt as usage counts it
    assert tokenize.tokens == whole
    assert tokenize.items == len(HISTORY) + 1  # the items and the header
    assert scan.tokens == whole
    assert ran.work.counts["store"].calls == 0


async def test_extending_a_cached_context_renders_only_the_new_items() -> None:
    engine = scripted(text("ok"))
    base = (await prepare(engine, body(HISTORY[:-1]))).ctx
    before = base.token_count

    ran = await prepare(engine, body(HISTORY[-1:]), base=base)
    assert ran.ctx is base  # extended in place
    new = count_rendered(HISTORY[-1:])
    tokenize, scan = ran.work.counts["tokenize"], ran.work.counts["scan"]
    assert (tokenize.calls, tokenize.items, tokenize.tokens) == (1, 1, new)  # no header re-render
    assert (scan.calls, scan.tokens) == (1, new)
    assert ran.ctx.token_count == before + new

    # The same conversation sent whole costs the whole history.
    full = await prepare(engine, body(HISTORY))
    assert full.ctx.token_count == ran.ctx.token_count
    assert list(full.ctx.tokens) == list(ran.ctx.tokens)
    assert full.work.counts["tokenize"].tokens == len(full.ctx.tokens) > 5 * new


async def test_restoring_from_the_store_renders_the_whole_chain() -> None:
    engine = scripted(text("First answer."), text("Second answer."))
    first = await drive(engine, body(HISTORY[:1]))
    ran = await prepare(engine, body("Next?", previous_response_id=first.response.id))
    assert ran.work.counts["store"].calls == 1
    assert ran.work.counts["tokenize"].tokens == len(ran.ctx.tokens)
    assert [type(i) for i in ran.ctx.items] == [Message, Message, Message]


async def test_routing_once_per_prepare_unless_a_route_is_given() -> None:
    engine = scripted(text("ok"))
    ran = await prepare(engine, body("hi"))
    routing = ran.work.counts["routing"]
    assert (routing.calls, routing.items) == (1, 1)
    assert ran.ctx.route is not None and ran.ctx.route.model == "m"

    route = Route(model="m", engine="m/pinned")
    pinned = await prepare(engine, body("hi"), route=route)
    assert pinned.work.counts["routing"].calls == 0
    assert pinned.ctx.route is route
    assert pinned.prepared.rollout.route is route


async def test_billing_once_per_run() -> None:
    engine = scripted(call("get_weather", {"city": "Rome"}), text("ok"))
    first = await drive(engine, body("hi"))
    assert first.work.counts["billing"].calls == 1
    assert first.work.counts["inference"].calls == 1

    fc = first.response.output[0]
    assert isinstance(fc, FunctionCall)
    output = {"type": "function_call_output", "call_id": fc.call_id, "output": "rainy"}
    second = await drive(engine, body([output], previous_response_id=first.response.id))
    assert second.work.counts["billing"].calls == 1
    assert second.work.counts["routing"].calls == 1
    assert engine.stats.responses == 2


# -- input checks -------------------------------------------------------------------------------


def state(ctx: Context) -> tuple[Any, ...]:
    return (
        ctx.token_count,
        list(ctx.tokens),
        list(ctx.items),
        dict(ctx.by_id),
        set(ctx.open_calls),
        ctx.header_key,
        ctx.scan.tokens_scanned,
        list(ctx.block_hashes),
    )


async def test_output_for_an_unknown_call_is_refused_and_leaves_the_context() -> None:
    engine = scripted(text("ok"))
    base = (await prepare(engine, body(HISTORY))).ctx
    before = state(base)
    bad = [
        {"role": "user", "content": "here are results"},
        {"type": "function_call_output", "call_id": "call_never", "output": "x"},
    ]
    with pytest.raises(ProtocolError) as info:
        # Changed instructions too: the check must come before any header work.
        await prepare(engine, body(bad, instructions="Something new."), base=base)
    assert info.value.param == "input[1].call_id"
    assert info.value.code == "invalid_value"
    assert info.value.status == 400
    assert "call_never" in info.value.message
    assert state(base) == before


async def test_a_second_output_for_an_answered_call_is_refused() -> None:
    engine = scripted(text("ok"))
    ran = await prepare(engine, body(HISTORY))  # call_1 answered inside the same input
    assert ran.ctx.open_calls == set()
    before = state(ran.ctx)
    again = {"type": "function_call_output", "call_id": "call_1", "output": "still sunny"}
    with pytest.raises(ProtocolError) as info:
        await prepare(engine, body([again]), base=ran.ctx)
    assert info.value.param == "input[0].call_id"
    assert state(ran.ctx) == before


async def test_output_before_its_call_in_the_same_input_is_refused() -> None:
    items = [HISTORY[0], HISTORY[2], HISTORY[1]]
    with pytest.raises(ProtocolError) as info:
        await prepare(scripted(text("ok")), body(items))
    assert info.value.param == "input[1].call_id"


async def test_unknown_item_reference_is_refused() -> None:
    engine = scripted(text("ok"))
    base = (await prepare(engine, body(HISTORY))).ctx
    before = state(base)
    bad = [{"role": "user", "content": "see"}, {"type": "item_reference", "id": "msg_nope"}]
    with pytest.raises(ProtocolError) as info:
        await prepare(engine, body(bad), base=base)
    assert info.value.param == "input[1].id"
    assert info.value.code == "invalid_value"
    assert "msg_nope" in info.value.message
    assert state(base) == before


async def test_item_reference_is_resolved_into_the_context() -> None:
    engine = scripted(text("The first answer."), text("The second answer."))
    first = await drive(engine, body("Question one?"))
    answer = first.response.output[0]
    assert isinstance(answer, Message) and answer.id
    ctx = first.ctx
    n_items, n_tokens = len(ctx.items), ctx.token_count

    refs = [{"type": "item_reference", "id": answer.id}, {"role": "user", "content": "More?"}]
    ran = await prepare(engine, body(refs), base=ctx)
    assert not any(isinstance(i, ItemReference) for i in ran.ctx.items)
    assert ran.ctx.items[n_items] == answer  # the referenced item itself, re-sent
    added = len(tokens_of(answer)) + len(tokens_of(ran.ctx.items[-1]))
    assert ran.ctx.token_count == n_tokens + added


async def test_item_reference_to_an_earlier_input_item() -> None:
    items = [
        {"type": "message", "id": "msg_mine", "role": "user", "content": "Remember this."},
        {"type": "item_reference", "id": "msg_mine"},
    ]
    ran = await prepare(scripted(text("ok")), body(items))
    assert [i.id for i in ran.ctx.items] == ["msg_mine", "msg_mine"]


async def test_missing_previous_response_is_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        await prepare(scripted(text("ok")), body("hi", previous_response_id="resp_missing"))
    assert info.value.code == "previous_response_not_found"
    assert info.value.param == "previous_response_id"
    assert "resp_missing" in info.value.message


async def test_chain_through_a_response_with_an_item_reference() -> None:
    engine = scripted(text("a"), text("b"), text("c"))
    first = await drive(engine, body("one"))
    ref = {"type": "item_reference", "id": first.response.output[0].id}
    second = await drive(
        engine,
        body([ref, {"role": "user", "content": "two"}], previous_response_id=first.response.id),
    )
    third = await drive(engine, body("three", previous_response_id=second.response.id))
    assert third.response.status == "completed"


async def test_changing_instructions_twice_on_a_cached_context_keeps_the_history() -> None:
    engine = scripted(text("a"), text("b"), text("c"))
    ctx = (await drive(engine, body("one", instructions="First."))).ctx
    ctx = (await drive(engine, body("two", instructions="Second."), base=ctx)).ctx
    ctx = (await drive(engine, body("three", instructions="Third."), base=ctx)).ctx
    items: list[Item] = list(ctx.items)
    expected = list(header_tokens("Third.", ctx.tools))
    expected += [t for i in items for t in tokens_of(i)]
    assert list(ctx.tokens) == expected
