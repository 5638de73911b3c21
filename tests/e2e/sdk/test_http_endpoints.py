# The endpoints beside create, with the official SDK: counting input tokens (the real tokenizer,
# so the count equals the usage of the same request), compaction (user messages kept, the rest one
# compaction item whose blob restores the history at a fraction of its tokens; a tampered blob is
# refused), and the model list.
from __future__ import annotations

import httpx2 as httpx
import openai
import pytest
from openai import OpenAI

from support.errors import assert_envelope
from support.tools import MODEL

HISTORY = [
    {"role": "user", "content": "Summarize the design of the parser module in detail."},
    {"role": "assistant", "content": "The parser reads tokens one by one. " * 40},
    {"role": "user", "content": "And the error handling?"},
    {"role": "assistant", "content": "Errors carry the offending position and a message. " * 40},
]


def test_input_tokens_counts_what_a_create_is_billed(client: OpenAI) -> None:
    counted = client.responses.input_tokens.count(model=MODEL, input=HISTORY)
    assert counted.object == "response.input_tokens" and counted.input_tokens > 300
    created = client.responses.create(model=MODEL, input=HISTORY)
    assert created.usage is not None
    assert created.usage.input_tokens == counted.input_tokens  # one sampling step: one prompt


def test_input_tokens_of_a_chain_include_the_history(client: OpenAI) -> None:
    first = client.responses.create(model=MODEL, input=HISTORY)
    alone = client.responses.input_tokens.count(model=MODEL, input="next")
    chained = client.responses.input_tokens.count(
        model=MODEL, input="next", previous_response_id=first.id
    )
    assert chained.input_tokens > alone.input_tokens + 300


def test_compact_keeps_user_messages_and_shrinks_the_rest(client: OpenAI) -> None:
    compacted = client.responses.compact(model=MODEL, input=HISTORY)
    assert compacted.object == "response.compaction"
    kinds = [item.type for item in compacted.output]
    assert kinds == ["message", "message", "compaction"]
    assert [m.role for m in compacted.output[:2]] == ["user", "user"]
    full = client.responses.input_tokens.count(model=MODEL, input=HISTORY)
    window = [item.model_dump(exclude_none=True, warnings=False) for item in compacted.output]
    small = client.responses.input_tokens.count(model=MODEL, input=window)
    assert small.input_tokens < full.input_tokens / 2
    # The compacted window continues the conversation (store: false, as a stateless client).
    after = client.responses.create(model=MODEL, input=[*window, {"role": "user", "content": "Go"}])
    assert after.status == "completed"


def test_a_tampered_compaction_blob_is_refused(client: OpenAI) -> None:
    compacted = client.responses.compact(model=MODEL, input=HISTORY)
    window = [item.model_dump(exclude_none=True, warnings=False) for item in compacted.output]
    blob = window[-1]["encrypted_content"]
    window[-1]["encrypted_content"] = blob[:-6] + ("AAAAAA" if blob[-6:] != "AAAAAA" else "BBBBBB")
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model=MODEL, input=window)
    assert refused.value.code == "invalid_encrypted_content"


def test_compact_needs_a_model(http: httpx.Client) -> None:
    r = http.post("/responses/compact", json={"input": "hi"})
    assert r.status_code == 400
    assert_envelope(r.json(), code="missing_required_parameter", param="model")


def test_models_are_listed_and_retrievable(client: OpenAI, http: httpx.Client) -> None:
    names = [m.id for m in client.models.list()]
    assert "gpt-4o" in names and "o3" in names
    assert client.models.retrieve("o3").id == "o3"
    r = http.get("/models/no-such-model")
    assert r.status_code == 404
    assert_envelope(r.json(), code="model_not_found", param="model")
    assert http.head("/models").status_code == 200
