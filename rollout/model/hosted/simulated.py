# The hosted code interpreter, file search and image generation, the module behind their rows
# of the hosted tools (rollout.model.hosted): each a simulated service with a declared latency
# (the cost profile's `code_interpreter_s`, `file_search_s`, `image_generation_s`) whose result
# is derived from the call alone, so runs repeat exactly: the interpreter "runs" a short Python
# program written from the prompt and logs a deterministic line, file search returns results
# synthesized from its query (rollout has no vector stores: docs/protocol-choices.md), image
# generation returns a small valid PNG (made with zlib, no download). The default model calls
# each when the prompt asks for it (computing or plotting; searching files or documents;
# drawing an image); a forcing `tool_choice` makes the call on the first step.
from __future__ import annotations

import base64
import hashlib
import re
import struct
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import trio

from protocol.hosted import (
    CODE_INTERPRETER_TOOL,
    FILE_SEARCH_TOOL,
    IMAGE_GENERATION_TOOL,
    HostedTool,
)
from protocol.items import CodeInterpreterCall, FileSearchCall, HostedItem, ImageGenerationCall
from rollout.conversation.calls import HostedSpec
from rollout.conversation.context import Context
from rollout.model.grounding import Grounding, ground
from rollout.model.profiles import CostProfile

_COMPUTE = re.compile(
    r"\b(calculate|compute|computing|plot|chart|graph|histogram|python|run (this|the) code"
    r"|code interpreter|solve|sum of|average|mean|median|factorial|fibonacci|csv)\b"
)
_FILES = re.compile(
    r"\b(my|our|the uploaded|uploaded|attached) (files?|documents?|docs|pdfs?|notes)\b"
    r"|\bsearch (my|the|our) (files?|documents?|docs|knowledge base)\b|\bfile search\b"
)
_IMAGE = re.compile(
    r"\b(draw|paint|sketch|illustrate|generate an? (image|picture|illustration)|make an? "
    r"(image|picture|drawing|logo)|create an? (image|picture|illustration|logo))\b"
)


def _asks(pattern: re.Pattern[str], ctx: Context, tool: HostedTool) -> bool:
    return ctx.hosted_since_user.get(tool.name, 0) == 0 and bool(
        pattern.search(ctx.last_user_text.lower())
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _subject(ctx: Context) -> str:
    g = ground(ctx)
    return " ".join(g.words[:8]) or ctx.last_user_text[:80] or "the request"


# -- code interpreter ----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CodeSpec(HostedSpec):
    tool: ClassVar[HostedTool] = CODE_INTERPRETER_TOOL
    code: str
    container_id: str = ""

    def opening(self, item_id: str) -> HostedItem:
        container = self.container_id or f"cntr_{_digest(self.code)[:24]}"
        return CodeInterpreterCall(
            id=item_id, status="in_progress", container_id=container, code=self.code
        )


def code_plan(ctx: Context) -> CodeSpec:
    subject = _subject(ctx).replace('"', "'")
    return CodeSpec(code=f'# {subject}\nresult = len("{subject}")\nprint(result)')


def code_wants(ctx: Context, g: Grounding, named: bool) -> CodeSpec | None:
    del g
    return code_plan(ctx) if not named and _asks(_COMPUTE, ctx, CODE_INTERPRETER_TOOL) else None


def code_from_script(value: Any) -> CodeSpec:
    return CodeSpec(code=str(value))


def code_from_item(item: Mapping[str, Any]) -> CodeSpec:
    return CodeSpec(code=str(item.get("code") or ""), container_id=str(item.get("container_id")))


@attrs.define
class CodeInterpreter:
    """The simulated interpreter: declared latency, then the program's one line of output
    (the value its last line prints, as the program computes it: a string's length)."""

    costs: CostProfile

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, CodeSpec) and isinstance(item, CodeInterpreterCall)
        if self.costs.code_interpreter_s > 0:
            await trio.sleep(self.costs.code_interpreter_s)
        found = re.search(r'len\("(.*)"\)', spec.code)
        logs = f"{len(found.group(1))}\n" if found else ""
        outputs = ({"type": "logs", "logs": logs},)
        return attrs.evolve(item, status="completed", outputs=outputs)


# -- file search ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FileSearchSpec(HostedSpec):
    tool: ClassVar[HostedTool] = FILE_SEARCH_TOOL
    queries: tuple[str, ...]

    def opening(self, item_id: str) -> HostedItem:
        return FileSearchCall(id=item_id, status="in_progress", queries=self.queries)


def search_plan(ctx: Context) -> FileSearchSpec:
    return FileSearchSpec(queries=(_subject(ctx),))


def search_wants(ctx: Context, g: Grounding, named: bool) -> FileSearchSpec | None:
    del g
    return search_plan(ctx) if not named and _asks(_FILES, ctx, FILE_SEARCH_TOOL) else None


def search_from_script(value: Any) -> FileSearchSpec:
    return FileSearchSpec(queries=(str(value),))


def search_from_item(item: Mapping[str, Any]) -> FileSearchSpec:
    return FileSearchSpec(queries=tuple(str(q) for q in item.get("queries") or ()))


@attrs.define
class FileSearch:
    """The simulated file search: declared latency, then results derived from the queries
    (files that do not exist anywhere but here: their ids say so)."""

    costs: CostProfile
    results: int = 2

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, FileSearchSpec) and isinstance(item, FileSearchCall)
        if self.costs.file_search_s > 0:
            await trio.sleep(self.costs.file_search_s)
        query = " ".join(spec.queries)
        digest = _digest(query)
        found = tuple(
            {
                "file_id": f"file-{digest[i * 12 : i * 12 + 12]}",
                "filename": f"{'-'.join(query.lower().split()[:3]) or 'notes'}-{i + 1}.md",
                "score": round(0.9 - 0.1 * i, 2),
                "text": f"Notes on {query}, part {i + 1}.",
                "attributes": {},
            }
            for i in range(self.results)
        )
        return attrs.evolve(item, status="completed", results=found)


# -- image generation ----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ImageSpec(HostedSpec):
    tool: ClassVar[HostedTool] = IMAGE_GENERATION_TOOL
    prompt: str


def image_plan(ctx: Context) -> ImageSpec:
    return ImageSpec(prompt=ctx.last_user_text[:200] or "an image")


def image_wants(ctx: Context, g: Grounding, named: bool) -> ImageSpec | None:
    del g
    return image_plan(ctx) if not named and _asks(_IMAGE, ctx, IMAGE_GENERATION_TOOL) else None


def image_from_script(value: Any) -> ImageSpec:
    return ImageSpec(prompt=str(value))


def image_from_item(item: Mapping[str, Any]) -> ImageSpec:
    return ImageSpec(prompt=str(item.get("revised_prompt") or ""))


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour (8-bit RGB), made with zlib alone."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


@attrs.define
class ImageGeneration:
    """The simulated image generator: declared latency, then a small PNG whose colour is
    derived from the prompt."""

    costs: CostProfile
    side: int = 16

    async def complete(self, spec: HostedSpec, item: HostedItem) -> HostedItem:
        assert isinstance(spec, ImageSpec) and isinstance(item, ImageGenerationCall)
        if self.costs.image_generation_s > 0:
            await trio.sleep(self.costs.image_generation_s)
        d = hashlib.sha256(spec.prompt.encode()).digest()
        image = png(self.side, self.side, (d[0], d[1], d[2]))
        return attrs.evolve(
            item,
            status="completed",
            result=base64.b64encode(image).decode(),
            revised_prompt=spec.prompt,
            size=f"{self.side}x{self.side}",
            output_format="png",
            quality="low",
            background="opaque",
        )
