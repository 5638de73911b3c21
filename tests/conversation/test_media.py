# What images and files cost (rollout.conversation.media), against the figures OpenAI's
# documentation gives ("Images and vision: calculating costs": 85 tokens at low detail; a 1024 x
# 1024 image 765 at high detail, a 2048 x 4096 one 1105; GPT-4.1-mini's 32px patches times 1.62),
# with sizes read from real PNG, GIF, JPEG and WebP headers and PDFs built here.
from __future__ import annotations

import pytest

from rollout.conversation import media
from rollout.conversation import tokens as tok
from support.media import data_url, gif, jpeg, pdf, png, webp


@pytest.mark.parametrize(
    ("make", "kind"),
    [(png, "image/png"), (gif, "image/gif"), (jpeg, "image/jpeg"), (webp, "image/webp")],
)
def test_the_size_is_read_from_the_header_of_a_data_url(make: object, kind: str) -> None:
    assert callable(make)
    assert media.url_image_size(data_url(kind, make(1500, 900))) == (1500, 900)


def test_an_image_of_no_known_format_or_a_url_has_no_size() -> None:
    assert media.url_image_size("https://example.com/cat.png") is None
    assert media.url_image_size(data_url("image/png", b"not an image")) is None
    assert media.url_image_size("data:image/png;base64,%%%") is None


def test_the_documented_examples_of_the_tile_rule() -> None:
    assert media.image_tokens("gpt-4o", "high", (1024, 1024)) == 765
    assert media.image_tokens("gpt-4o", "high", (2048, 4096)) == 1105
    assert media.image_tokens("gpt-4o", "low", (4096, 8192)) == 85
    assert media.image_tokens("gpt-4o", "auto", (1024, 1024)) == 765  # auto counts as high


def test_a_png_header_of_known_size_gives_the_documented_tile_count() -> None:
    url = data_url("image/png", png(2048, 4096))
    # 2048 x 4096 -> 1024 x 2048 -> 768 x 1536: 2 x 3 tiles of 512px.
    assert media.image_tokens("gpt-4o", "high", media.url_image_size(url)) == 85 + 170 * 6


def test_a_small_image_is_not_scaled_up() -> None:
    assert media.image_tokens("gpt-4o", "high", (128, 64)) == 85 + 170


def test_an_image_of_unknown_size_counts_as_the_default_size() -> None:
    assert media.DEFAULT_SIZE == (1024, 1024)
    assert media.image_tokens("gpt-4o", "high", None) == 765


def test_families_have_their_own_constants() -> None:
    assert media.image_tokens("gpt-4o-mini", "low", (512, 512)) == 2833
    assert media.image_tokens("gpt-4o-mini-2024-07-18", "high", (512, 512)) == 2833 + 5667
    assert media.image_tokens("gpt-4.1", "high", (1024, 1024)) == 765
    assert media.image_tokens("o3", "low", (512, 512)) == 75
    assert media.image_tokens("some-model", "low", (512, 512)) == 85


def test_the_patch_rule_of_the_documentation() -> None:
    # 1024 x 1024: 32 x 32 patches = 1024, under the cap of 1536; gpt-4.1-mini multiplies by 1.62.
    assert media.image_tokens("gpt-4.1-mini", "high", (1024, 1024)) == 1659  # ceil(1024 * 1.62)
    # 1800 x 2400: 4275 patches, scaled down to 1452 (the documentation's example).
    assert media.Patches(multiplier=1.0).tokens("high", 1800, 2400) == 1452
    assert media.image_tokens("gpt-4.1-mini", "low", (1024, 1024)) == 1659  # detail aside


def test_an_inline_pdf_is_its_text_and_an_image_of_each_page() -> None:
    found = media.file_content(data_url("application/pdf", pdf(3, "Hello world")), "a.pdf")
    assert found == media.FileContent("Hello world", 3)
    page = media.image_tokens("gpt-4o", "high", media.PAGE_SIZE)
    assert page == 85 + 170 * 4  # 612 x 792: 2 x 2 tiles
    assert media.file_tokens_of_pages("gpt-4o", 3) == 3 * page


def test_inline_text_files_are_their_text_and_other_bytes_an_estimate() -> None:
    text = media.file_content(data_url("text/plain", b"alpha beta"), "a.txt")
    assert text == media.FileContent("alpha beta", 0)
    binary = media.file_content(data_url("application/octet-stream", b"\xff\xfe" * 50), None)
    assert binary == media.FileContent("", 0, 100 // media.BYTES_PER_TOKEN)


def test_a_file_not_given_inline_is_one_page() -> None:
    assert media.file_content(None, "report.pdf") == media.FileContent("", 1)


def test_media_tokens_name_their_content() -> None:
    one, other = tok.media(5, "data:a"), tok.media(5, "data:b")
    assert len(one) == len(other) == 5
    assert one[1:] == other[1:] and one[0] != other[0]
    assert tok.media(5, "data:a") == one  # the same content, the same tokens
    assert len(tok.media(0, "x")) == 0
