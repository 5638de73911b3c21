# What the simulated model (and the server around it) does with each field of a create request,
# as data: docs/gen_reference.py prints it in docs/reference.md, and tests/e2e/docs fails when a
# CreateRequest field has no entry here. Say what happens, not what the field means in general.
from __future__ import annotations

KNOBS: dict[str, str] = {
    "model": "Picks the model's profile (`MODEL_PROFILES`: context window, whether it reasons and "
    "its default effort) and, with `prompt_cache_key` and the prompt's first 256 tokens, the "
    "engine the request is routed to. Any name is accepted; one not in the table gets 128k "
    "tokens and no reasoning.",
    "input": "The new items of the conversation; tool outputs must answer open calls; reasoning "
    "items are restored from their `encrypted_content` (a tampered blob is "
    "`invalid_encrypted_content`).",
    "instructions": "Rendered as the system header of the prompt; not carried over by "
    "`previous_response_id`.",
    "previous_response_id": "Continues a stored (or, over WebSocket, a connection-cached) "
    "response; unknown ids are `previous_response_not_found`.",
    "conversation": 'A conversation id (or `{"id": ...}`): its items come before the input, '
    "and the response's input and output are appended to it. Not with `previous_response_id`.",
    "store": "Whether the response is kept for retrieval and chaining. With `store: false`, a "
    "reasoning item sent back without its `encrypted_content` is `Item with id ... not found`.",
    "stream": "SSE over HTTP; ignored over WebSocket (always streamed).",
    "stream_options": "Accepted; delta events never carry `obfuscation`.",
    "background": "Runs the response in the background over HTTP: the create returns it "
    "`queued`; poll, stream again from any event, cancel (docs/long-running.md). Needs `store`; "
    "refused over WebSocket.",
    "tools": "Function tools the model may call (arguments generated valid for their schema; a "
    "`strict: true` one's schema is checked like the real API's); `web_search`, "
    "`code_interpreter`, `file_search` and `image_generation` are run as simulated hosted "
    "services; `mcp` servers are called for real (rollout is the MCP client; the `rollout[mcp]` "
    "extra); `computer_use_preview`/`computer` calls are the client's to run; the SDK's other "
    "types are echoed and not called; an unknown type is refused (echoed under `--lenient`).",
    "tool_choice": "`none`: no calls; `auto`: the model's choice; `required`, a named function "
    "or a hosted type: the response's first step makes that call; `allowed_tools`: calls only "
    "from its list (`mode: required` forces the first step). Naming a tool not in `tools`, or "
    "`required` without tools, is refused with `param: tool_choice`.",
    "parallel_tool_calls": "`false`: at most one tool call per model step (the default of a "
    "multi-agent response, which refuses `true`).",
    "max_output_tokens": "The output budget (reasoning included), at least 16 (1 under "
    "`--lenient`); when it runs out the response ends `incomplete` with `max_output_tokens`.",
    "max_tool_calls": "Tool calls (function and hosted) one response may make; further calls "
    "are dropped and the model answers.",
    "temperature": "Range-checked (0-2) and echoed; the simulated model is deterministic.",
    "top_p": "Range-checked (0-1) and echoed.",
    "presence_penalty": "Not an SDK parameter (OpenResponses): accepted, range-checked (-2 to 2) "
    "and echoed (default 0).",
    "frequency_penalty": "Not an SDK parameter (OpenResponses): accepted, range-checked (-2 to "
    "2) and echoed (default 0).",
    "top_logprobs": "Range-checked (0-20) and echoed; `logprobs` stay empty.",
    "truncation": "`disabled` (default): a prompt over the model's window is "
    "`context_length_exceeded`; `auto`: the oldest items are dropped until it fits.",
    "reasoning": "For a reasoning model: `effort` sets the reasoning tokens each step spends "
    "before its output (`REASONING_TOKENS`, decoded at the profile's speed, billed as "
    "`reasoning_tokens`); `summary` streams a summary part. Ignored for other models.",
    "text": "`format`: `text`, `json_object` (a JSON object) or `json_schema` (JSON valid for the "
    "schema, streamed as deltas; strict schemas are checked like the real API's); `verbosity` "
    "is echoed.",
    "include": "`reasoning.encrypted_content` returns each reasoning item's opaque blob; the "
    "SDK's other values are accepted (web search sources are always included).",
    "metadata": "Checked (16 keys, 64/512 characters) and echoed.",
    "prompt": "Accepted and ignored (no stored prompt templates).",
    "prompt_cache_key": "Routes the request: one key (with the same prompt prefix) keeps a "
    "conversation on one engine, where its prefix is cached. Echoed.",
    "prompt_cache_retention": "How long unused cached prefixes live (`in_memory`: 10 minutes, "
    "`24h`; default `24h`). Echoed.",
    "prompt_cache_options": "`ttl` (`30m`, `12h`) sets the lifetime of what the request writes; "
    "`mode: explicit` caches only at `prompt_cache_breakpoint` marks on content parts (the end "
    "of their item, not rounded to a block).",
    "safety_identifier": "Echoed.",
    "user": "Echoed.",
    "service_tier": "One of the SDK's values; `auto` or absent is reported as `default`; other "
    "values are echoed.",
    "context_management": "Accepted; no server-side compaction.",
    "moderation": "Accepted and ignored.",
    "type": "WebSocket only: `response.create`.",
    "stream_id": "WebSocket only: the lane the response runs in (FIFO per lane).",
    "generate": "WebSocket only: `false` prepares and caches the state without sampling.",
    "client_metadata": "Not an SDK parameter (Codex sends it): accepted and ignored.",
    "shape": "`append` runs the append shape (the rollout pauses on client tool calls); default "
    "`chain`.",
    "multi_agent": '`{"enabled": true}` (with the header `OpenAI-Beta: '
    "responses_multi_agent=v1`): over WebSocket the response waits for `response.inject` at a "
    "client call, without a pause event; over HTTP it completes there. The root agent may "
    "spawn subagents (a script's `spawn`/`wait`/... steps and `agents`; the default model, "
    "one per file or test the prompt names), at most `max_concurrent_subagents` (default 6) "
    "running at once; every item carries its `agent`.",
}
