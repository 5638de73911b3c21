# The REST surface of the Responses API over HTTP, as a routing table and one handler per
# resource: create (JSON or SSE), append (the append shape), retrieve (also as a replayed event
# stream), delete, input_items, cancel, and /metrics. Handlers parse the query and body and call
# the service layer; they write through an Exchange (the HTTP connection's reply and SSE stream),
# so they know nothing of h11 or sockets.
from __future__ import annotations

from typing import Any

from protocol import codec, errors
from protocol.errors import ProtocolError
from protocol.request import CreateRequest
from protocol.validate import betas_of, validate_create
from rollout.engine.compact import compact, count_input_tokens
from rollout.engine.loop import NullSink
from rollout.model.profiles import served_models
from rollout.server import conversations
from rollout.server.exchange import (
    Exchange,
    Handler,
    Request,
    int_query,
    integer,
    query,
    require_json,
)
from rollout.server.metrics import render as render_metrics
from rollout.service import retrieval
from rollout.service.service import Hold
from rollout.store.memory import visible

# -- handlers -------------------------------------------------------------------------------------


async def create(ex: Exchange, request: Request) -> None:
    require_json(request)
    work = ex.service.engine.stats.new_work()
    with work.stage("decode", items=1) as c:
        c.tokens = len(request.body)
        req = await ex.service.decode_create(
            request.body,
            betas=betas_of(request.headers.get("openai-beta", "")),
        )
    if req.background:
        queued = await ex.service.create_background(req, work, owner=ex.owner)
        if not req.stream:
            await ex.reply(200, codec.encode(queued))
            return
        source = await retrieval.source_of(ex.service, queued.id, ex.owner)
        events = ex.sse()  # its events, from its log: the run goes on if this client goes
        await source.follow(-1, events.emit_bytes)
        await events.end()
        return
    stream = ex.sse() if req.stream else None
    response = await ex.service.create(
        req, work, stream or NullSink(), owner=ex.owner, holder=stream
    )
    if stream is not None:
        await stream.end()
    else:
        await ex.reply(200, codec.encode(response))


async def append(ex: Exchange, request: Request, response_id: str) -> None:
    """`POST /v1/responses/{id}/append`: resume and stream to the next pause or the end."""
    require_json(request)
    work = ex.service.engine.stats.new_work()
    with work.stage("decode", items=1) as c:
        c.tokens = len(request.body)
        body = codec.decode_append(request.body)
    stream = ex.sse()
    await ex.service.append(
        response_id, body.input, work, stream, owner=ex.owner, holder=stream, hold=Hold.UNTIL_PAUSE
    )
    await stream.end()


async def metrics(ex: Exchange, request: Request) -> None:
    del request
    service = ex.service
    accelerator = service.engine.accelerator
    text = render_metrics(
        service.engine.stats,
        responses_in_flight=len(service.engine.running),
        suspended=service.live.waiting,
        live=len(service.live.rollouts),
        engine=accelerator.counts() if accelerator is not None else None,
    )
    await ex.reply_bytes(200, "text/plain; version=0.0.4", text.encode())


async def retrieve(ex: Exchange, request: Request, response_id: str) -> None:
    """`GET /v1/responses/{id}`: the response as it stands, or (`stream=true`) its events after
    `starting_after`, to its end."""
    include = retrieval.check_include(
        request.query.get("include[]", []) + request.query.get("include", [])
    )
    if query(request, "stream", "false").lower() != "true":
        await ex.reply(
            200, codec.encode(await retrieval.current(ex.service, response_id, ex.owner, include))
        )
        return
    after = query(request, "starting_after", "")
    start = integer(after, signed=True) if after else -1
    if start is None:
        raise errors.invalid(
            f"Invalid 'starting_after': expected an integer, got {errors.clip(repr(after))}.",
            param="starting_after",
            code="invalid_value",
        )
    source = await retrieval.source_of(ex.service, response_id, ex.owner)
    stream = ex.sse()
    await source.follow(start, stream.emit_bytes)
    await stream.end()


async def delete(ex: Exchange, request: Request, response_id: str) -> None:
    del request
    store = ex.service.engine.store
    record = visible(await store.get(response_id), ex.owner)
    if record is None or not await store.delete(response_id):
        raise errors.response_not_found(response_id)
    await ex.reply(200, {"id": response_id, "object": "response", "deleted": True})


async def input_items(ex: Exchange, request: Request, response_id: str) -> None:
    record = visible(await ex.service.engine.store.get(response_id), ex.owner)
    if record is None:
        raise errors.response_not_found(response_id)
    limit = int_query(request, "limit", 20, 1, 100)
    order = query(request, "order", "desc")
    if order not in ("asc", "desc"):
        raise errors.invalid(
            f"Invalid value: {errors.clip(repr(order))}. Supported values are: 'asc' and 'desc'.",
            param="order",
            code="invalid_value",
        )
    items = list(record.input_items)
    if order == "desc":
        items.reverse()
    after = query(request, "after", "")
    if after:
        ids = [getattr(i, "id", None) for i in items]
        if after not in ids:
            raise errors.invalid(
                f"Item with id '{errors.clip(after)}' not found.",
                param="after",
                code="invalid_value",
            )
        items = items[ids.index(after) + 1 :]
    page = [codec.to_json(i) for i in items[:limit]]
    await ex.reply(
        200,
        {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(items) > limit,
        },
    )


async def cancel(ex: Exchange, request: Request, response_id: str) -> None:
    del request
    final = await retrieval.cancel(ex.service, response_id, ex.owner)  # here or on its worker
    await ex.reply(200, final if isinstance(final, dict) else codec.encode(final))


async def input_tokens(ex: Exchange, request: Request) -> None:
    """`POST /v1/responses/input_tokens`: the prompt tokens a create with this body would have."""
    req = await _counted_request(ex, request)
    n = await count_input_tokens(ex.service.engine, req, ex.owner)
    await ex.reply(200, {"object": "response.input_tokens", "input_tokens": n})


async def compact_window(ex: Exchange, request: Request) -> None:
    """`POST /v1/responses/compact`: the compacted window of a conversation."""
    req = await _counted_request(ex, request, model_required=True)
    await ex.reply(200, await compact(ex.service.engine, req, ex.owner))


async def _counted_request(
    ex: Exchange, request: Request, model_required: bool = False
) -> CreateRequest:
    require_json(request)
    value = codec.loads(request.body)
    if isinstance(value, dict) and not model_required:
        value.setdefault("model", "gpt-4o")  # the count does not depend on the model's name
    if isinstance(value, dict):
        value.pop("stream", None)
    req = codec.decode_create(value)
    validate_create(req, websocket=False, strict=not ex.service.config.lenient)
    return req


async def models(ex: Exchange, request: Request) -> None:
    """`GET /v1/models`: the model names the simulated model declares (docs/profiles.md)."""
    del request
    await ex.reply(200, {"object": "list", "data": [_model(n) for n in served_models()]})


async def model(ex: Exchange, request: Request, name: str) -> None:
    del request
    if name not in served_models():
        raise ProtocolError(
            message=f"The model '{errors.clip(name)}' does not exist.",
            code="model_not_found",
            param="model",
            status=404,
        )
    await ex.reply(200, _model(name))


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "rollout"}


# -- routing --------------------------------------------------------------------------------------

#: path pattern ("{id}" is one path segment) -> method -> handler. HEAD goes wherever GET does.
#: Literal segments come before "{id}" patterns of the same length: the first match wins.
ROUTES: dict[tuple[str, ...], dict[str, Handler]] = {
    ("metrics",): {"GET": metrics},
    ("v1", "models"): {"GET": models},
    ("v1", "models", "{id}"): {"GET": model},
    ("v1", "responses"): {"POST": create},
    ("v1", "responses", "input_tokens"): {"POST": input_tokens},
    ("v1", "responses", "compact"): {"POST": compact_window},
    ("v1", "responses", "{id}"): {"GET": retrieve, "DELETE": delete},
    ("v1", "responses", "{id}", "input_items"): {"GET": input_items},
    ("v1", "responses", "{id}", "cancel"): {"POST": cancel},
    ("v1", "responses", "{id}", "append"): {"POST": append},
    ("v1", "conversations"): {"POST": conversations.create},
    ("v1", "conversations", "{id}"): {
        "GET": conversations.retrieve,
        "POST": conversations.update,
        "DELETE": conversations.delete,
    },
    ("v1", "conversations", "{id}", "items"): {
        "GET": conversations.list_items,
        "POST": conversations.create_items,
    },
    ("v1", "conversations", "{id}", "items", "{id}"): {
        "GET": conversations.retrieve_item,
        "DELETE": conversations.delete_item,
    },
}


def match(parts: tuple[str, ...]) -> tuple[dict[str, Handler], list[str]] | None:
    """The methods of the first pattern in ROUTES that a path's `parts` match, and the
    segments its "{id}"s stand for; None when none does."""
    for pattern, methods in ROUTES.items():
        if len(pattern) != len(parts):
            continue
        if all(want in ("{id}", got) for got, want in zip(parts, pattern, strict=True)):
            return methods, [p for p, want in zip(parts, pattern, strict=True) if want == "{id}"]
    return None


#: The patterns without an "{id}" that no earlier pattern matches: a path equal to one is routed
#: to it with one lookup (`resolve`), as `match` would route it.
LITERAL = {
    pattern: methods
    for pattern, methods in ROUTES.items()
    if "{id}" not in pattern and (found := match(pattern)) is not None and found[0] is methods
}


def resolve(parts: tuple[str, ...]) -> tuple[dict[str, Handler], list[str]] | None:
    """`match`, with a literal path looked up at once."""
    methods = LITERAL.get(parts)
    return (methods, []) if methods is not None else match(parts)


async def route(ex: Exchange, request: Request) -> None:
    parts = tuple(request.path.rstrip("/").split("/")[1:]) or ("",)
    found = resolve(parts)
    if found is None:
        raise errors.not_found_path(request.method, request.path)
    methods, args = found
    allowed = tuple(methods)
    if "GET" in allowed:  # RFC 9110 §9.3.2
        allowed = (*allowed, "HEAD")
    if request.method not in allowed:
        exc = errors.method_not_allowed(request.method, request.path)
        exc.headers = {"allow": ", ".join(sorted(allowed, key=_METHOD_ORDER.index))}
        raise exc
    handler = methods["GET" if request.method == "HEAD" else request.method]
    await handler(ex, request, *args)


_METHOD_ORDER = ["GET", "HEAD", "POST", "DELETE"]
