# An engine's loop environment is made once and kept while its parts stay, and made anew when
# one of them is replaced, so a rig that swaps the policy (or the inference profile, the cost
# profile, the prefix cache, the secret, the model) gets it at its next response. A response's
# first events are pushed before the loop runs, its first token flushed as it comes.
from __future__ import annotations

from typing import Any

from protocol import codec
from protocol.events import Event
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.engine.executors import EndResponse
from rollout.engine.loop import CallbackSink
from rollout.model import profiles
from rollout.model.inference import PrefixCache
from rollout.model.policy import ScriptedPolicy, call, text
from rollout.testing.sample import EXEC_TOOL


async def answer(engine: Engine) -> str:
    deltas: list[str] = []

    async def emit(event: Event) -> None:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)  # type: ignore[union-attr]

    body = {"model": "m", "input": "hi", "store": False}
    prepared = await engine.prepare(codec.decode_create(body), Work(), emit)
    await engine.run(prepared, EndResponse())
    return "".join(deltas)


async def test_the_environment_is_kept_until_a_part_is_replaced() -> None:
    engine = Engine(policy=ScriptedPolicy([text("one")]))
    assert await answer(engine) == "one"
    env = engine.loop_env
    assert engine.loop_env is env  # kept
    engine.policy = ScriptedPolicy([text("two")])
    assert engine.loop_env is not env
    assert await answer(engine) == "two"
    replacements: dict[str, Any] = {
        "inference": profiles.INFERENCE_PROFILES["instant"],
        "costs": profiles.COST_PROFILES["cpu-only"],
        "cache": PrefixCache(),
        "secret": b"another secret",
        "thoughts": {},
        "model": None,
    }
    for name, value in replacements.items():
        env = engine.loop_env
        setattr(engine, name, value)
        assert engine.loop_env is not env, name
    env = engine.loop_env
    engine.stats.responses += 1  # (not a part)
    engine.notify()
    assert engine.loop_env is env


async def test_created_and_in_progress_leave_before_the_loop_runs() -> None:
    """They are pushed as soon as they exist (as the real API sends them at once), so a client
    reads them while the model works, not with the first token; pushed, not flushed, so the
    task goes on to its first token without letting other creates run first."""
    seen: list[str] = []

    class Recording(CallbackSink):
        async def flush(self) -> None:
            seen.append("flush")

        def push(self) -> None:
            seen.append("push")

    async def emit(event: Event) -> None:
        seen.append(event.type)

    engine = Engine(policy=ScriptedPolicy([text("ok")]))
    body = {"model": "m", "input": "hi", "store": False}
    prepared = await engine.prepare(codec.decode_create(body), Work(), Recording(emit))
    await engine.run(prepared, EndResponse())
    assert seen[:3] == ["response.created", "response.in_progress", "push"]  # (no yield)
    first_delta = seen.index("response.output_text.delta")
    assert seen[first_delta + 1] == "flush"  # and the first token at once


async def test_a_calls_arguments_are_not_flushed_alone() -> None:
    """A call's arguments are not read before the call ends, and its end leaves with the pause
    or the terminal event (pushed): the first token of a step of calls is not flushed on its
    own (one write, not two); it is still the step's first token for the work's marks."""
    seen: list[str] = []

    class Recording(CallbackSink):
        async def flush(self) -> None:
            seen.append("flush")

    async def emit(event: Event) -> None:
        seen.append(event.type)

    engine = Engine(policy=ScriptedPolicy([call("exec", {"cmd": "ls"})]))
    body = {"model": "m", "input": "hi", "store": False, "tools": [EXEC_TOOL]}
    work = Work()
    prepared = await engine.prepare(codec.decode_create(body), work, Recording(emit))
    await engine.run(prepared, EndResponse())
    assert "response.function_call_arguments.delta" in seen
    assert "flush" not in seen
    assert "first_token" in dict(work.marks)
