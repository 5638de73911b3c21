# The conversation context (rollout.conversation.context): `extend` renders, scans and
# tokenizes only the new items; the token array is exactly the header's and each item's tokens
# (rollout.conversation.render); block hashes depend only on the token prefix; `set_header`
# re-renders only a changed header; the derived conversation state (turns, calls, open calls)
# follows the items; `fork` is independent.
from array import array
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    FunctionTool,
    Item,
    Message,
    OtherTool,
    SearchAction,
    UrlSource,
    WebSearchCall,
    text_of,
)
from rollout.conversation import tokens as tok
from rollout.conversation.blocks import BLOCK
from rollout.conversation.context import Context, render
from rollout.conversation.render import counted_as, header_tokens, tokens_of
from rollout.conversation.work import Work
from rollout.model.policy import sentence
from support import strategies

TOOLS = (
    FunctionTool(name="get_weather", parameters={"type": "object", "properties": {}}),
    OtherTool(type="web_search"),
)
INSTRUCTIONS = "You are terse."


def user(text: str, id: str | None = None) -> Message:
    return Message(role="user", content=text, id=id)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=text)


def fcall(call_id: str, name: str = "get_weather") -> FunctionCall:
    return FunctionCall(id=f"fc_{call_id}", call_id=call_id, name=name, arguments='{"x":1}')


def fout(call_id: str) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=call_id, output="sunny")


def long_text(tokens: int, seed: int = 0) -> str:
    import random

    return sentence(random.Random(seed), tokens)


def history() -> list[Item]:
    return [
        user("What is the weather in Paris? " + long_text(150, 1)),
        fcall("c1"),
        fout("c1"),
        assistant("It is sunny. " + long_text(100, 2)),
        user("And tomorrow?"),
    ]


def new_context(items: list[Item] | None = None) -> Context:
    ctx = Context()
    ctx.set_header(INSTRUCTIONS, TOOLS, Work())
    if items:
        ctx.extend(items, Work())
    return ctx


def rendered(items: list[Item]) -> list[int]:
    """The items' tokens, each rendered on its own (rollout.conversation.render)."""
    return [t for i in items for t in tokens_of(i)]


def header(instructions: str | None, tools: tuple[Any, ...]) -> list[int]:
    return list(header_tokens(instructions, tools))


# -- extend: cost proportional to the new items -------------------------------------------------


def test_extend_tokenizes_only_the_new_items() -> None:
    items = history()
    ctx = new_context(items[:3])
    before = ctx.token_count

    work = Work()
    new = items[3:]
    added = ctx.extend(new, work)

    expected = len(rendered(new))
    assert added == expected
    assert ctx.token_count == before + expected
    tokenize = work.counts["tokenize"]
    assert (tokenize.calls, tokenize.items, tokenize.tokens) == (1, len(new), expected)
    scan = work.counts["scan"]  # the scan counts exactly the tokens it scanned
    assert (scan.calls, scan.items, scan.tokens) == (1, len(new), expected)
    assert ctx.scan.tokens_scanned == len(ctx.tokens)  # header and every input item, once
    assert ctx.token_count == len(ctx.tokens) + tok.REPLY_PRIMING  # and the reply's priming


def test_extend_without_scan_and_with_nothing() -> None:
    ctx = new_context(history()[:1])
    work = Work()
    assert ctx.extend([], work) == 0
    ctx.extend([assistant("ok")], work, scan=False)
    assert work.counts["scan"].calls == 0
    assert work.counts["tokenize"].calls == 1


def test_token_array_is_the_encoding_of_header_and_renders() -> None:
    items = history()
    ctx = Context()
    ctx.set_header(INSTRUCTIONS, TOOLS, Work())
    for item in items:  # one item at a time: batch boundaries must not change the tokens
        ctx.extend([item], Work())
    assert isinstance(ctx.tokens, array) and ctx.tokens.typecode == "I"
    full = header(INSTRUCTIONS, TOOLS) + rendered(items)
    assert list(ctx.tokens) == full
    assert ctx.header_len == len(header(INSTRUCTIONS, TOOLS))
    assert list(new_context(items).tokens) == list(ctx.tokens)


def test_web_search_call_renders_query_and_sources() -> None:
    search = WebSearchCall(
        id="ws_1",
        status="completed",
        action=SearchAction(query="trio", sources=(UrlSource(url="https://example.com/a"),)),
    )
    assert "trio\nhttps://example.com/a" in render(search)
    ctx = new_context([user("q"), search])
    assert ctx.searches_since_user == 1


# -- block hashes -------------------------------------------------------------------------------


def test_block_hashes_depend_only_on_the_token_prefix() -> None:
    items = history()
    one = new_context(items)
    two = Context()
    two.set_header(INSTRUCTIONS, TOOLS, Work())
    for item in items:
        two.extend([item], Work())
    assert one.token_count >= 2 * BLOCK
    assert len(one.block_hashes) == len(one.tokens) // BLOCK
    assert one.block_hashes == two.block_hashes

    # Same prefix, different tails: blocks wholly before the first differing token agree; the
    # block holding it and every later one differ (each hash chains its predecessors).
    a = new_context([*items[:4], user("A first long question. " + long_text(300, 8))])
    b = new_context([*items[:4], user("Something else entirely. " + long_text(300, 9))])
    first_diff = next(i for i, (x, y) in enumerate(zip(a.tokens, b.tokens, strict=False)) if x != y)
    common = first_diff // BLOCK
    n = min(len(a.block_hashes), len(b.block_hashes))
    assert 0 < common < n
    assert a.block_hashes[:common] == b.block_hashes[:common]
    assert all(a.block_hashes[k] != b.block_hashes[k] for k in range(common, n))


def test_block_hashes_differ_with_a_different_header() -> None:
    items = history()
    a = new_context(items)
    b = Context()
    b.set_header("You are verbose.", TOOLS, Work())
    b.extend(items, Work())
    assert a.block_hashes[0] != b.block_hashes[0]


# -- set_header ---------------------------------------------------------------------------------


def test_unchanged_header_does_nothing() -> None:
    ctx = new_context(history())
    tokens, hashes = list(ctx.tokens), list(ctx.block_hashes)
    work = Work()
    assert ctx.set_header(INSTRUCTIONS, TOOLS, work) == 0
    assert work.counts["tokenize"].calls == 0
    assert work.counts["scan"].calls == 0
    assert list(ctx.tokens) == tokens
    assert ctx.block_hashes == hashes


def test_changed_header_rerenders_only_the_header() -> None:
    items = history()
    ctx = new_context(items)
    item_tokens = list(ctx.tokens[ctx.header_len :])

    work = Work()
    new_tools = (FunctionTool(name="lookup"),)
    ctx.set_header("Answer in French.", new_tools, work)

    head = header("Answer in French.", new_tools)
    tokenize = work.counts["tokenize"]
    assert (tokenize.calls, tokenize.items, tokenize.tokens) == (1, 1, len(head))
    assert list(ctx.tokens) == head + item_tokens
    assert set(ctx.function_tools) == {"lookup"}
    assert ctx.web_search is False
    assert ctx.instructions == "Answer in French."
    # The hashes are those of a context built from scratch with the new header.
    fresh = Context()
    fresh.set_header("Answer in French.", new_tools, Work())
    fresh.extend(items, Work())
    assert list(fresh.tokens) == list(ctx.tokens)
    assert ctx.block_hashes == fresh.block_hashes


def test_changed_header_reports_only_the_header_tokens() -> None:
    ctx = new_context(history())
    added = ctx.set_header("Answer in French.", (), Work())
    head = header("Answer in French.", ())
    assert ctx.header_len == len(head)
    assert added == len(head)


def test_second_header_change_keeps_the_item_tokens() -> None:
    items = history()
    ctx = new_context(items)
    ctx.set_header("First change.", (), Work())
    ctx.set_header("Second change.", TOOLS, Work())
    assert list(ctx.tokens) == header("Second change.", TOOLS) + rendered(items)


def test_header_installs_tools() -> None:
    ctx = new_context()
    assert set(ctx.function_tools) == {"get_weather"}
    assert ctx.web_search is True
    assert ctx.tools == TOOLS


# -- derived conversation state -----------------------------------------------------------------


def test_turns_calls_and_open_calls_follow_the_items() -> None:
    ctx = new_context()
    ctx.extend([user("hi", id="msg_u1")], Work())
    assert (ctx.model_turns, ctx.calls_since_user, ctx.open_calls) == (0, 0, set())
    assert ctx.last_user_text == "hi"

    ctx.extend([fcall("c1"), fcall("c2")], Work())  # one turn with two parallel calls
    assert ctx.model_turns == 1
    assert ctx.calls_since_user == 2
    assert ctx.open_calls == {"c1", "c2"}
    assert ctx.call_names == {"c1": "get_weather", "c2": "get_weather"}

    ctx.extend([fout("c1")], Work())
    assert ctx.open_calls == {"c2"}
    ctx.extend([fout("c2")], Work())
    assert ctx.open_calls == set()

    ctx.extend([fcall("c3")], Work())  # a model item after tool output: a new turn
    assert ctx.model_turns == 2
    assert ctx.calls_since_user == 3
    ctx.extend([fout("c3"), assistant("done")], Work())
    assert ctx.model_turns == 3

    ctx.extend([user("again")], Work())
    assert ctx.calls_since_user == 0
    assert ctx.searches_since_user == 0
    assert ctx.last_user_text == "again"
    assert ctx.model_turns == 3
    assert ctx.by_id["msg_u1"] == 0
    assert ctx.by_id["fc_c3"] == 5


# -- fork ---------------------------------------------------------------------------------------


def state(ctx: Context) -> tuple[Any, ...]:
    """A copy of everything a fork must not share with its parent."""
    return (
        list(ctx.items),
        list(ctx.tokens),
        list(ctx.block_hashes),
        dict(ctx.by_id),
        set(ctx.open_calls),
        ctx.scan.tokens_scanned,
        ctx.model_turns,
    )


def test_fork_is_independent() -> None:
    ctx = new_context(history()[:2])
    snapshot = state(ctx)
    child = ctx.fork()
    child.extend([fout("c1"), assistant(long_text(400, 5)), fcall("c9", "lookup")], Work())
    child.set_header("Other.", (), Work())
    child.function_tools["x"] = FunctionTool(name="x")

    assert snapshot == state(ctx)
    assert set(ctx.function_tools) == {"get_weather"}
    assert ctx.instructions == INSTRUCTIONS
    assert child.open_calls == {"c9"}
    assert child.token_count != ctx.token_count


def test_an_unchanged_header_decoded_anew_is_recognized_without_encoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rollout.conversation.context as context_module

    ctx = Context()
    ctx.set_header(INSTRUCTIONS, TOOLS, Work())
    encoded: list[object] = []
    real = context_module.codec.tools_json

    def counting(value: object) -> object:
        encoded.append(value)
        return real(value)

    monkeypatch.setattr(context_module.codec, "tools_json", counting)
    again = tuple(attrs.evolve(t) for t in TOOLS)  # equal values, new objects
    assert ctx.set_header(INSTRUCTIONS, again, Work()) == 0
    assert encoded == []
    changed = (FunctionTool(name="get_time", parameters={"type": "object"}),)
    assert ctx.set_header(INSTRUCTIONS, changed, Work()) > 0
    assert len(encoded) >= 1
    assert ctx.tools == changed


@settings(max_examples=60, deadline=None)
@given(st.lists(strategies.messages | strategies.function_call_outputs, max_size=6))
def test_items_are_looked_up_by_what_counted_as_says(items: list[Item]) -> None:
    # A message of one text part is keyed at once; every item's key is `counted_as`'s.
    ctx = Context()
    keys = ctx.look_up(items).keys
    assert keys == [counted_as(i, ctx._hidden(i)) for i in items]


@settings(max_examples=60, deadline=None)
@given(st.lists(strategies.messages | strategies.function_calls, max_size=6))
def test_the_last_user_text_is_the_last_user_messages(items: list[Item]) -> None:
    # Noted once per extension, as noting the items one by one notes it.
    whole, one_by_one = Context(), Context()
    whole._note(list(items))
    for item in items:
        one_by_one._note([item])
    assert whole.last_user_text == one_by_one.last_user_text
    assert whole.calls_since_user == one_by_one.calls_since_user
    users = [i for i in items if isinstance(i, Message) and i.role == "user"]
    assert whole.last_user_text == (text_of(users[-1].content) if users else "")
