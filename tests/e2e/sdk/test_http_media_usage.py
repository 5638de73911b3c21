# Usage as the official SDK reads it, counted as the real API counts: a one-word input is 8 input
# tokens (the chat format's framing and the reply's priming), and an image adds what OpenAI's
# documentation says it costs for its size and detail (a base64 PNG's size read from its header).
from __future__ import annotations

from typing import Any

from openai import OpenAI

from rollout.conversation import media
from support.media import data_url, png

VISION = "gpt-4o"


def input_tokens(client: OpenAI, content: Any) -> int:
    resp = client.responses.create(model=VISION, input=[{"role": "user", "content": content}])
    assert resp.status == "completed" and resp.usage is not None
    return resp.usage.input_tokens


def test_a_one_word_input_is_eight_tokens(client: OpenAI) -> None:
    resp = client.responses.create(model=VISION, input="hi")
    assert resp.usage is not None and resp.usage.input_tokens == 8


def test_an_image_adds_its_documented_cost_to_input_tokens(client: OpenAI) -> None:
    question = {"type": "input_text", "text": "What is in this image?"}
    plain = input_tokens(client, [question])
    url = data_url("image/png", png(2048, 4096))  # 768 x 1536 after scaling: 6 tiles
    for detail, cost in (("high", 85 + 170 * 6), ("low", 85)):
        image = {"type": "input_image", "image_url": url, "detail": detail}
        assert input_tokens(client, [question, image]) == plain + cost
    by_url = {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"}
    default = media.image_tokens(VISION, "high", media.DEFAULT_SIZE)
    assert input_tokens(client, [question, by_url]) == plain + default == plain + 765
    counted = client.responses.input_tokens.count(
        model=VISION, input=[{"role": "user", "content": [question, by_url]}]
    )
    assert counted.input_tokens == plain + 765
