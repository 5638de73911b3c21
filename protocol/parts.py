# Content parts and annotations: the pieces of a message's content and of a tool output's body,
# as immutable attrs classes (protocol.items re-exports them; protocol.clientitems builds on them).
from typing import Any, Literal

import attrs


@attrs.frozen(kw_only=True)
class InputText:
    type: Literal["input_text"] = "input_text"
    text: str
    prompt_cache_breakpoint: dict[str, Any] | None = None  # {mode: explicit, ttl?}; omitted if None


@attrs.frozen(kw_only=True)
class InputImage:
    type: Literal["input_image"] = "input_image"
    image_url: str | None = None
    file_id: str | None = None
    detail: str = "auto"
    prompt_cache_breakpoint: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class InputFile:
    type: Literal["input_file"] = "input_file"
    file_id: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    filename: str | None = None
    detail: str | None = None  # auto, low or high (protocol.itemrules); omitted if None
    prompt_cache_breakpoint: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class UrlCitation:
    type: Literal["url_citation"] = "url_citation"
    url: str
    title: str
    start_index: int
    end_index: int


@attrs.frozen(kw_only=True)
class FileCitation:
    type: Literal["file_citation"] = "file_citation"
    file_id: str
    filename: str
    index: int


@attrs.frozen(kw_only=True)
class ContainerFileCitation:
    type: Literal["container_file_citation"] = "container_file_citation"
    container_id: str
    file_id: str
    filename: str
    start_index: int
    end_index: int


@attrs.frozen(kw_only=True)
class FilePath:
    type: Literal["file_path"] = "file_path"
    file_id: str
    index: int


#: An output text's annotations, as the SDK's ResponseOutputTextParam types them (the model
#: writes only URL citations; the others come back in an assistant message of the input).
Annotation = UrlCitation | FileCitation | ContainerFileCitation | FilePath


@attrs.frozen(kw_only=True)
class OutputText:
    type: Literal["output_text"] = "output_text"
    text: str
    annotations: tuple[Annotation, ...] = ()
    logprobs: tuple[Any, ...] = ()


@attrs.frozen(kw_only=True)
class Refusal:
    type: Literal["refusal"] = "refusal"
    refusal: str


ContentPart = InputText | InputImage | InputFile | OutputText | Refusal
