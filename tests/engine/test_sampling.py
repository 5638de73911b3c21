# The one sampling loop (rollout.engine.sampling) driven through the engine without sockets:
# `Engine.prepare` + `Engine.run(prepared, EndResponse())` with a ScriptedPolicy, collecting the
# events. Text answers, the chain shape's function calls (single and parallel), hosted web search
# with citations, model errors, the output budget, and the script position following the context.
from collections.abc import Sequence
from typing import Any

import attrs

from protocol import codec
from protocol.items import FunctionCall, FunctionCallOutput, Item, Message, WebSearchCall
from protocol.response import Response
from rollout import CallStep, ErrorStep, ScriptedPolicy, call, search, text
from rollout.conversation import tokens as tok
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.conversation.render import tokens_of
from rollout.engine.engine import Engine
from rollout.engine.loop import Call, Executor, Rollout
from rollout.model.hosted.web_search import WebSearch
from rollout.model.policy import Step, cited_answer
from rollout.model.profiles import CostProfile
from support.drive import Ran, scripted
from support.drive import drive as run
from support.events import (
    START,
    TERMINAL,
    TEXT_CLOSE,
    TEXT_OPEN,
    WEB_SEARCH_CALL,
    text_answer_types,
)

# -- harness ------------------------------------------------------------------------------------


async def drive(
    engine: Engine, body: dict[str, Any], client: Executor | None = None, **kw: Any
) -> Ran:
    """One response to its end: numbered from 0, exactly one terminal event, the last."""
    ran = await run(engine, body, client, **kw)
    assert [e.sequence_number for e in ran.events] == list(range(len(ran.events)))
    assert sum(t in TERMINAL for t in ran.types) == 1
    assert ran.types[-1] in TERMINAL
    return ran


def output_text(response: Response, index: int = -1) -> str:
    item = response.output[index]
    assert isinstance(item, Message)
    (part,) = item.content
    assert not isinstance(part, str)
    return part.text  # type: ignore[union-attr]


def deltas(ran: Ran, type_: str = "response.output_text.delta") -> list[str]:
    return [e.delta for e in ran.of(type_)]


ANSWER = "The patch updates the parser, so the failing case now passes and the build is green."


# -- text ---------------------------------------------------------------------------------------


async def test_text_only() -> None:
    ran = await drive(scripted(text(ANSWER)), {"model": "m", "input": "Status?"})
    n = len(deltas(ran))
    assert ran.types == text_answer_types(n)
    assert "".join(deltas(ran)) == ANSWER
    assert ran.of("response.output_text.done")[0].text == ANSWER
    assert ran.response.status == "completed"
    assert output_text(ran.response) == ANSWER
    usage = ran.response.usage
    assert usage is not None
    assert usage.output_tokens == n == tok.count(ANSWER)
    # The prompt is the context before the answer joined it.
    answer_tokens = len(tokens_of(ran.response.output[0]))
    assert usage.input_tokens == ran.ctx.token_count - answer_tokens
    # "Status?" as a user message: 3 framing tokens, its role and text, the reply's priming.
    assert usage.input_tokens == 3 + tok.count("user") + tok.count("Status?") + tok.REPLY_PRIMING
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert ran.of("response.completed")[0].response.usage == usage
    assert ran.ctx.items[-1] == ran.response.output[0]


MULTIBYTE = "日本語のテキスト 🦜🦜 한국어 텍스트 🧬🪐 ok"


async def test_multibyte_text_streams_whole_characters() -> None:
    ran = await drive(scripted(text(MULTIBYTE)), {"model": "m", "input": "x"})
    assert "".join(deltas(ran)) == MULTIBYTE
    assert "\ufffd" not in "".join(deltas(ran))


async def test_usage_counts_real_tokens_of_multibyte_text() -> None:
    ran = await drive(scripted(text(MULTIBYTE)), {"model": "m", "input": "x"})
    assert ran.response.usage is not None
    assert ran.response.usage.output_tokens == tok.count(MULTIBYTE)


# -- function calls (the chain shape) -----------------------------------------------------------


async def test_one_function_call_ends_the_response() -> None:
    args = '{"city": "Paris", "units": "metric", "days": [1, 2, 3]}'
    ran = await drive(scripted(call("get_weather", args)), {"model": "m", "input": "Weather?"})
    n = len(deltas(ran, "response.function_call_arguments.delta"))
    assert n > 1
    assert ran.types == [
        *START,
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * n,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert "".join(deltas(ran, "response.function_call_arguments.delta")) == args
    assert ran.of("response.function_call_arguments.done")[0].arguments == args
    assert ran.response.status == "completed"
    (item,) = ran.response.output
    assert isinstance(item, FunctionCall)
    assert (item.name, item.arguments, item.status) == ("get_weather", args, "completed")
    assert item.call_id.startswith("call_") and item.id and item.id.startswith("fc_")
    assert ran.ctx.open_calls == {item.call_id}
    assert ran.response.usage is not None and ran.response.usage.output_tokens == n


async def test_parallel_calls() -> None:
    step = CallStep(
        calls=(
            FunctionCallSpec(name="a", arguments='{"x": 1}'),
            FunctionCallSpec(name="b", arguments='{"y": "two"}'),
        )
    )
    ran = await drive(scripted(step), {"model": "m", "input": "go"})
    out = ran.response.output
    assert [type(i) for i in out] == [FunctionCall, FunctionCall]
    assert [i.name for i in out] == ["a", "b"]  # type: ignore[union-attr]
    assert len({i.call_id for i in out}) == 2  # type: ignore[union-attr]
    added = ran.of("response.output_item.added")
    done = ran.of("response.output_item.done")
    assert [e.output_index for e in added] == [0, 1]
    assert [e.output_index for e in done] == [0, 1]
    for index, args in ((0, '{"x": 1}'), (1, '{"y": "two"}')):
        pieces = [
            e.delta
            for e in ran.of("response.function_call_arguments.delta")
            if e.output_index == index
        ]
        assert "".join(pieces) == args
    assert ran.response.status == "completed"
    assert ran.ctx.model_turns == 1


# -- hosted web search --------------------------------------------------------------------------


async def test_hosted_search_then_cited_text() -> None:
    query = "trio structured concurrency"

    def policy(ctx: Context) -> Step:
        if ctx.searches_since_user == 0:
            return search(query)
        return cited_answer("Trio runs tasks in nurseries.", ctx)

    costs = CostProfile(name="t", web_search_s=0.05)
    engine = Engine(policy=ScriptedPolicy(policy), costs=costs)
    body = {"model": "m", "input": "Tell me about trio", "tools": [{"type": "web_search"}]}
    ran = await drive(engine, body)

    n = len(deltas(ran))
    urls = [s.url for s in WebSearch(costs).sources(query)]
    assert ran.types == [
        *START,
        *WEB_SEARCH_CALL,
        *TEXT_OPEN,
        *ran.types[9 : 9 + n + len(urls)],  # deltas with the annotations among them
        *TEXT_CLOSE,
        "response.completed",
    ]
    middle = set(ran.types[9 : 9 + n + len(urls)])
    assert middle == {"response.output_text.delta", "response.output_text.annotation.added"}
    assert [e.output_index for e in ran.of("response.output_item.added")] == [0, 1]

    search_item, message = ran.response.output
    assert isinstance(search_item, WebSearchCall) and search_item.status == "completed"
    assert search_item.action is not None and search_item.action.query == query  # type: ignore[union-attr]
    annotations = [e.annotation for e in ran.of("response.output_text.annotation.added")]
    assert [a.url for a in annotations] == urls
    assert [e.annotation_index for e in ran.of("response.output_text.annotation.added")] == [
        0,
        1,
        2,
    ]
    assert isinstance(message, Message)
    (part,) = message.content
    assert part.annotations == tuple(annotations)  # type: ignore[union-attr]
    body_text = output_text(ran.response)
    assert [body_text[a.start_index : a.end_index] for a in annotations] == [
        "Source 1",
        "Source 2",
        "Source 3",
    ]
    hosted = ran.work.counts["hosted_tool"]
    assert (hosted.calls, hosted.items) == (1, 1)
    assert hosted.seconds >= costs.web_search_s
    assert ran.work.counts["inference"].calls == 2  # one sampling step per loop iteration


# -- failure and the output budget --------------------------------------------------------------


async def test_error_step_fails_the_response() -> None:
    step = ErrorStep(code="server_error", message="The model broke.")
    ran = await drive(scripted(step), {"model": "m", "input": "x"})
    assert ran.types == [*START, "error", "response.failed"]
    error = ran.events[2]
    assert error.error.code == "server_error"  # type: ignore[union-attr]
    assert error.error.message == "The model broke."  # type: ignore[union-attr]
    assert ran.response.status == "failed"
    assert ran.response.error is not None and ran.response.error.code == "server_error"
    assert ran.response.output == []


async def test_small_max_output_tokens_is_incomplete() -> None:
    body = {"model": "m", "input": "x", "max_output_tokens": 3}
    ran = await drive(scripted(text(ANSWER)), body)
    assert ran.types[-1] == "response.incomplete"
    assert ran.response.status == "incomplete"
    assert ran.response.incomplete_details is not None
    assert ran.response.incomplete_details.reason == "max_output_tokens"
    assert len(deltas(ran)) == 3
    assert ran.response.usage is not None and ran.response.usage.output_tokens == 3
    assert output_text(ran.response) == "".join(deltas(ran))


async def test_exact_budget_completes() -> None:
    body = {"model": "m", "input": "x", "max_output_tokens": tok.count("Short answer.")}
    ran = await drive(scripted(text("Short answer.")), body)
    assert ran.response.status == "completed"


async def test_budget_cuts_a_function_call() -> None:
    body = {"model": "m", "input": "x", "max_output_tokens": 3}
    ran = await drive(scripted(call("f", {"long": "argument " * 20})), body)
    assert ran.types[-1] == "response.incomplete"
    assert ran.response.incomplete_details is not None
    assert ran.response.incomplete_details.reason == "max_output_tokens"


async def test_budget_cut_closes_every_output_item() -> None:
    body = {"model": "m", "input": "x", "max_output_tokens": 3}
    ran = await drive(scripted(call("f", {"long": "argument " * 20})), body)
    added = [e.output_index for e in ran.of("response.output_item.added")]
    done = [e.output_index for e in ran.of("response.output_item.done")]
    assert added == done
    assert all(getattr(i, "status", None) != "in_progress" for i in ran.response.output)


async def test_budget_cut_message_is_marked_incomplete() -> None:
    body = {"model": "m", "input": "x", "max_output_tokens": 3}
    ran = await drive(scripted(text(ANSWER)), body)
    message = ran.response.output[0]
    assert isinstance(message, Message)
    assert message.status == "incomplete"


# -- the script position follows the context ----------------------------------------------------


def as_input(items: Sequence[Item]) -> list[Any]:
    return [codec.to_json(i) for i in items]


async def test_chain_via_store_plays_the_next_step() -> None:
    engine = scripted(call("get_weather", {"city": "Paris"}), text("It is sunny."))
    first = await drive(engine, {"model": "m", "input": "Weather in Paris?"})
    (fc,) = first.response.output
    assert isinstance(fc, FunctionCall)
    assert await engine.store.get(first.response.id) is not None

    output = {"type": "function_call_output", "call_id": fc.call_id, "output": "sunny"}
    body = {"model": "m", "previous_response_id": first.response.id, "input": [output]}
    second = await drive(engine, body)
    assert second.response.status == "completed"
    assert output_text(second.response) == "It is sunny."
    assert second.response.previous_response_id == first.response.id
    assert [type(i) for i in second.ctx.items] == [
        Message,
        FunctionCall,
        FunctionCallOutput,
        Message,
    ]
    assert second.work.counts["store"].calls == 2  # restore + put

    # The same script gives the same rollout when the client resends the full history instead.
    history = [{"role": "user", "content": "Weather in Paris?"}, *as_input([fc]), output]
    replay = await drive(engine, {"model": "m", "input": history, "store": False})
    assert output_text(replay.response) == "It is sunny."
    assert replay.ctx.model_turns == second.ctx.model_turns == 2


async def test_script_past_its_end_answers_final() -> None:
    engine = Engine(policy=ScriptedPolicy([text("one")], final="The end."))
    first = await drive(engine, {"model": "m", "input": "a"})
    body = {"model": "m", "input": "b", "previous_response_id": first.response.id}
    second = await drive(engine, body)
    assert output_text(second.response) == "The end."


async def test_script_after_hosted_search_plays_the_next_step() -> None:
    engine = scripted(search("q"), text("first"), text("second"))
    tools = [{"type": "web_search"}]
    first = await drive(engine, {"model": "m", "input": "one", "tools": tools})
    assert output_text(first.response) == "first"
    body = {"model": "m", "input": "two", "tools": tools, "previous_response_id": first.response.id}
    second = await drive(engine, body)
    assert output_text(second.response) == "second"


@attrs.define
class AnswerCalls:
    """A client-tool executor that answers every call at once."""

    scans = True

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item] | None:
        del r
        out: list[Item] = []
        for c in calls:
            assert isinstance(c.item, FunctionCall)
            out.append(
                FunctionCallOutput(id=f"fco_{c.item.call_id}", call_id=c.item.call_id, output="42")
            )
        return out


async def test_client_tool_outputs_join_the_context() -> None:
    engine = scripted(call("f", {}), text("The answer is 42."))
    ran = await drive(engine, {"model": "m", "input": "x"}, client=AnswerCalls())
    assert any(isinstance(i, FunctionCallOutput) for i in ran.ctx.items)
