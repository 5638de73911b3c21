"""The server's own HTTP/1.1 parser and framing (rollout.server.http11) against h11, which the
server ran on before: the same byte streams (valid, malformed, split anywhere, oversized heads,
smuggling-style Content-Length and Transfer-Encoding mixes, pipelined requests) give the same
requests, bodies, keep-alive and Expect decisions, the same refusals (with the same status), and
the same response bytes, on either side (tests/support/h11oracle.py); a sized body read straight
into its buffer, as the transport reads it, gives the same too."""

from __future__ import annotations

import re
import string
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rollout.server.httpconn import _request
from rollout.server.httphead import BadRequest, Head, parse_head, parse_lines, split_lines
from support.h11oracle import Answer, H11Side, OwnSide, OwnSizedSide, drive

SETTINGS = settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WEIRD = "\x00\t\x0b\x0c\r\x1c\x1f\x7f\x85\xa0\xff ,;:=\"'aZ09-_/é"


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], odds: int = 10) -> Any:
    """`common`, and one time in `odds` `rare`."""
    return st.sampled_from(range(odds)).flatmap(lambda n: rare if n == odds - 1 else common)


methods = mostly(
    st.sampled_from(["GET", "POST", "POST", "HEAD", "CONNECT", "DELETE"]),
    st.sampled_from(["get", "", "G T", "P\tT"]) | st.text(alphabet="AB-!#/ \t", max_size=4),
    25,
)
targets = mostly(
    st.sampled_from(["/v1/responses", "/", "/a?b=1&b=2", "*", "//x/y", "http://h/p?q", "/a#f"]),
    st.text(alphabet=string.printable + "\x00\x7f\x80", max_size=8),
    25,
)
versions = mostly(
    st.sampled_from(["1.1", "1.1", "1.1", "1.0"]), st.sampled_from(["0.9", "2.0", "1", "11"]), 25
)
NAMES = [
    "Content-Length",
    "content-length",
    "Transfer-Encoding",
    "Connection",
    "Expect",
    "Upgrade",
    "Content-Type",
    "X-A",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
]
VALUES = [
    "x",
    "",
    " ",
    "5",
    "0",
    "05",
    "5, 5",
    "5,6",
    "5,",
    "-1",
    " 5 ",
    "5\x0b",
    "5\x1c",
    "99999999999999999999",
    "123456789012345678901",
    "chunked",
    "Chunked",
    " CHUNKED ",
    "gzip",
    "chunked, gzip",
    "close",
    "Close, Upgrade",
    "keep-alive",
    "upgrade",
    "websocket",
    ",",
    " , ",
    "100-continue",
    "100-Continue, x",
    "13",
    "a\tb",
    "a  b\t",
    "\x85\xa0",
]
values = mostly(st.sampled_from(VALUES), st.text(alphabet=WEIRD, max_size=6), 30)
ends = mostly(st.sampled_from(["\r\n", "\r\n", "\n"]), st.just("\r\r\n"), 40)


@st.composite
def fields(draw: st.DrawFn) -> str:
    name = draw(
        mostly(
            st.sampled_from(NAMES),
            st.sampled_from(["Bad Name", "X:Y", "", "Ä", "host", "HOST"])
            | st.text(alphabet="aZ-", max_size=4),
            40,
        )
    )
    colon = draw(mostly(st.sampled_from([":", ": ", ":\t"]), st.sampled_from([" :", ""]), 40))
    text = f"{name}{colon}{draw(values)}{draw(ends)}"
    if draw(st.integers(0, 15)) == 0:  # an obsolete folded continuation
        text += draw(st.sampled_from([" ", "\t", "  "])) + draw(values) + draw(ends)
    return text


@st.composite
def chunked_body(draw: st.DrawFn) -> str:
    out = ""
    for _ in range(draw(st.integers(0, 3))):
        data = draw(st.text(alphabet="ab\r\n", max_size=6))
        size = draw(mostly(st.just(len(data)), st.sampled_from([len(data) + 1, len(data) - 1])))
        digits = draw(mostly(st.sampled_from(["%x", "%X", "%03x", "%x;ext=1"]),
                             st.sampled_from(["%x ", "%x;a\rb", "z%x", "%x;a\nb"])))  # fmt: skip
        out += (digits % max(0, size)) + draw(mostly(st.just("\r\n"), ends)) + data
        out += draw(mostly(st.just("\r\n"), st.sampled_from(["\n", "x", "\r"])))
    if draw(mostly(st.just(True), st.just(False))):
        out += draw(mostly(st.just("0"), st.sampled_from(["00", "0;x"]))) + "\r\n"
        out += "".join(draw(st.lists(fields(), max_size=2))) + draw(ends)
    return out


@st.composite
def request(draw: st.DrawFn) -> str:
    odd = ["{m}  {t} HTTP/{v}", "{m} {t}", "{m} {t} http/{v}", " {m} {t} HTTP/{v}"]
    line = draw(mostly(st.just("{m} {t} HTTP/{v}"), st.sampled_from(odd), 25))
    text = line.format(m=draw(methods), t=draw(targets), v=draw(versions)) + draw(ends)
    if draw(st.integers(0, 30)) == 0:
        text = draw(st.sampled_from(["\r\n", "\n"])) + text
    heads = draw(st.lists(fields(), max_size=5))
    for usual in ("Expect: 100-continue\r\n", "Connection: close\r\n"):
        if draw(st.integers(0, 5)) == 0:
            heads.insert(draw(st.integers(0, len(heads))), usual)
    if draw(mostly(st.just(True), st.just(False))):
        heads.insert(draw(st.integers(0, len(heads))), "Host: h\r\n")
    body = ""
    how = draw(st.sampled_from(["none", "sized", "sized", "chunked", "chunked", "both"]))
    if how in ("sized", "both"):
        data = draw(st.text(alphabet="{}ab", max_size=8))
        size = draw(mostly(st.just(len(data)), st.sampled_from([len(data) + 2, 0])))
        heads.insert(draw(st.integers(0, len(heads))), f"Content-Length: {size}\r\n")
        body = data
    if how in ("chunked", "both"):
        heads.insert(draw(st.integers(0, len(heads))), "Transfer-Encoding: chunked\r\n")
        body = draw(chunked_body())
    return text + "".join(heads) + draw(ends) + body


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    """Requests (pipelined, maybe mutated), cut into pieces, and whether the stream ends."""
    whole = "".join(draw(st.lists(request(), min_size=1, max_size=3))).encode("latin-1")
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 0, 1, 3]))):
        at = draw(st.integers(0, len(whole)))
        what = draw(st.sampled_from([b"", b"\r", b"\n", b" ", b"\x00", b":", b"0"]))
        cut = draw(st.integers(0, 2))
        whole = whole[:at] + what + whole[at + cut :]
    cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=5)))
    pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
    return [p for p in pieces if p], draw(st.booleans())


@st.composite
def answers(draw: st.DrawFn) -> list[Answer]:
    out: list[Answer] = []
    for _ in range(3):
        status = draw(st.sampled_from([200, 200, 400, 404, 413, 503]))
        headers = [("content-type", "application/json"), ("x-request-id", "req_1")]
        headers += draw(
            st.lists(
                st.sampled_from(
                    [
                        ("connection", "close"),
                        ("connection", "Keep-Alive"),
                        ("retry-after", "1"),
                        ("cache-control", "no-cache"),
                        ("allow", "GET, HEAD"),
                    ]
                ),
                max_size=2,
                unique=True,
            )
        )
        parts = draw(st.lists(st.binary(min_size=1, max_size=5), max_size=3))
        if draw(st.booleans()):
            headers.append(("content-length", str(sum(len(p) for p in parts))))
        out.append((status, headers, parts))
    return out


def _compare(chunks: list[bytes], eof: bool, max_head: int, limit: int, replies: Any) -> None:
    expected = drive(H11Side(max_head), chunks, eof, limit, lambda i: replies[i])
    got = drive(OwnSide(max_head), chunks, eof, limit, lambda i: replies[i])
    assert got == expected
    sized = drive(OwnSizedSide(max_head), chunks, eof, limit, lambda i: replies[i])
    assert sized == expected


@SETTINGS
@given(
    stream=streams(),
    max_head=st.sampled_from([24, 200, 1000, 1000, 1000, 1000]),
    limit=st.sampled_from([0, 8, 1000, 1000]),
    replies=answers(),
)
@example(  # a head complete in one read, bigger than the limit: refused all the same
    stream=([b"GET / HTTP/1.1\r\nHost: h\r\nX-A: " + b"a" * 40 + b"\r\n\r\n"], False),
    max_head=24,
    limit=8,
    replies=[(200, [("content-length", "0")], [])] * 3,
)
def test_the_same_requests_and_refusals_as_h11(
    stream: tuple[list[bytes], bool], max_head: int, limit: int, replies: list[Answer]
) -> None:
    _compare(*stream, max_head, limit, replies)


H = b"POST / HTTP/1.1\r\nHost: h\r\n"
CASES = [
    b"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    H + b"Content-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n0\r\n\r\n",
    H + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nabcde",
    H + b"Content-Length: 5, 5\r\n\r\nabcde",
    H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcde",
    H + b"Transfer-Encoding: gzip\r\nContent-Length: x\r\n\r\n",
    H + b"Content-Length: x\r\nTransfer-Encoding: gzip\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n  b\r\n\r\n",
    b"GET / HTTP/1.1\r\n b\r\nHost: h\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
    b"GET /v1/responses HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    b"xyz",
    H + b"Upgrade: h2c\r\nContent-Length: 1\r\n\r\nx",
    b"CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n",
    b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    b" GET / HTTP/1.1\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nX-A: \x85\xa0\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\x1c\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\n\r\n5;" + b"x" * 200,
    H + b"Transfer-Encoding: chunked\r\n\r\n0\r\nX-A: b\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: b\r\n\r\n",
    H + b"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n{",
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("eof", [False, True])
def test_cases_read_byte_by_byte_and_whole(case: bytes, eof: bool) -> None:
    replies: list[Answer] = [(200, [("content-type", "text/event-stream")], [b"ab", b"c"])] * 3
    for chunks in ([case], [case[i : i + 1] for i in range(len(case))]):
        for max_head, limit in ((1000, 1000), (40, 4)):
            _compare(chunks, eof, max_head, limit, replies)


@SETTINGS
@given(st.text(alphabet=string.printable + "\x80é", max_size=12))
def test_the_quick_target_path_is_what_urlsplit_makes_of_it(target: str) -> None:
    try:
        head = parse_head(f"GET /{target} HTTP/1.1\r\nHost: h\r\n\r\n")
    except BadRequest:
        return  # not a target
    try:
        split = urlsplit(head.target)
    except ValueError:  # (e.g. "//["): not a URL, refused with a 400
        with pytest.raises(BadRequest):
            _request(head)
        return
    request = _request(head)
    assert (request.path, request.query) == (split.path, parse_qs(split.query))


@SETTINGS
@given(st.lists(fields(), max_size=6), versions)
def test_the_quick_head_path_agrees_with_the_line_by_line_one(
    heads: list[str], version: str
) -> None:
    text = f"GET / HTTP/{version}\r\n" + "".join(heads) + "\r\n"
    end = re.search("\n\r?\n", text)
    assert end is not None
    text = text[: end.end()]  # where the head ends
    try:
        quick: Any = parse_head(text)
    except BadRequest as exc:
        quick = exc.status
    try:
        slow: Any = parse_lines(split_lines(text), text)
    except BadRequest as exc:
        slow = exc.status
    if isinstance(slow, int) or isinstance(quick, int):
        assert quick == slow
        return
    assert [getattr(quick, name) for name in Head.__slots__] == [
        getattr(slow, name) for name in Head.__slots__
    ]
