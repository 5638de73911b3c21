# How items become prompt tokens (rollout.conversation.render), as the real API counts them: each
# item a message of the chat format (3 framing tokens, its role, its content), the prompt 3 more
# for the reply's priming (OpenAI cookbook, "How to count tokens with tiktoken"), and images and
# files what the documentation says they cost (rollout.conversation.media).
from __future__ import annotations

from array import array

from protocol.items import FunctionCallOutput, InputFile, InputImage, InputText, Message
from rollout.conversation import media
from rollout.conversation import tokens as tok
from rollout.conversation.context import Context
from rollout.conversation.render import header_tokens, render, tokens_of
from rollout.conversation.work import Work
from support.media import data_url, pdf, png


def prompt(*items: Message | FunctionCallOutput, instructions: str | None = None) -> int:
    ctx = Context(model="gpt-4o")
    ctx.set_header(instructions, (), Work())
    ctx.extend(items, Work())
    return ctx.token_count


def test_a_one_word_message_is_eight_tokens() -> None:
    # 3 framing tokens, "user" (1), "hi" (1), and the reply's priming (3): the cookbook's count.
    assert tok.count("user") == tok.count("hi") == 1
    assert prompt(Message(role="user", content="hi")) == 8


def test_each_message_costs_its_role_and_content_and_three() -> None:
    words = "What is the weather in Paris today?"
    one = prompt(Message(role="user", content=words))
    assert one == 3 + tok.count("user") + tok.count(words) + tok.REPLY_PRIMING
    two = prompt(Message(role="user", content=words), Message(role="assistant", content="Sunny."))
    assert two == one + 3 + tok.count("assistant") + tok.count("Sunny.")
    system = prompt(Message(role="user", content=words), instructions="Be terse.")
    assert system == one + 3 + tok.count("system") + tok.count("Be terse.")


def test_the_framing_tokens_are_single_special_tokens() -> None:
    tokens = tokens_of(Message(role="user", content="hi"))
    assert list(tokens) == [tok.START, *tok.encode("user"), tok.MESSAGE, *tok.encode("hi"), tok.END]
    # A user's text that spells a framing token is text, never the token itself.
    spelled = tokens_of(Message(role="user", content="<|end|>"))
    assert spelled.count(tok.END) == 1 and len(spelled) > 5


def test_an_empty_context_has_no_prompt() -> None:
    assert Context().token_count == 0


def test_an_image_adds_what_its_size_and_detail_cost() -> None:
    url = data_url("image/png", png(1024, 1024))
    text = Message(role="user", content=(InputText(text="What is this?"),))
    for detail, cost in (("high", 765), ("low", 85), ("auto", 765)):
        image = InputImage(image_url=url, detail=detail)
        with_image = Message(role="user", content=(InputText(text="What is this?"), image))
        assert prompt(with_image) == prompt(text) + cost
    by_url = Message(role="user", content=(InputImage(image_url="https://example.com/a.png"),))
    assert prompt(by_url) == prompt(Message(role="user", content="")) + 765  # the default size


def test_an_image_in_a_tool_output_counts_too() -> None:
    url = data_url("image/png", png(100, 100))
    plain = FunctionCallOutput(call_id="c", output=(InputText(text="done"),))
    shown = FunctionCallOutput(
        call_id="c", output=(InputText(text="done"), InputImage(image_url=url, detail="low"))
    )
    assert prompt(shown) == prompt(plain) + 85


def test_an_inline_pdf_counts_its_text_and_pages() -> None:
    part = InputFile(filename="a.pdf", file_data=data_url("application/pdf", pdf(2, "Hello world")))
    empty = prompt(Message(role="user", content=""))
    pages = media.file_tokens_of_pages("gpt-4o", 2)
    assert prompt(Message(role="user", content=(part,))) == empty + tok.count("Hello world") + pages


def test_rendering_is_deterministic_and_the_text_is_what_the_scan_reads() -> None:
    url = data_url("image/png", png(640, 480))
    item = Message(role="user", content=(InputText(text="look"), InputImage(image_url=url)))
    assert tokens_of(item, "gpt-4o") == tokens_of(item, "gpt-4o")
    assert "look" in render(item) and url not in render(item)
    assert header_tokens(None, ()) == array("I")
