# The conversation a sampling loop works on: items, the rendered-token cache (one compact
# array('I') of header + item tokens), tool definitions, safety-scan state, the resolved route,
# the prefix-cache block hashes and what the current request asks of the model (tool choice,
# output format). It grows by `extend(items)`, whose cost is proportional to the new items; only
# `rollout.conversation.window.truncated` (an over-long context with `truncation: auto`)
# rebuilds it from a suffix.
from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import attrs
import orjson

from protocol import codec
from protocol.choices import OutputFormat, ToolChoice
from protocol.clientitems import (
    BUILTIN_CLIENT_TYPES,
)
from protocol.hosted import HOSTED_BY_ITEM, HOSTED_BY_TYPE, WEB_SEARCH_TOOL
from protocol.items import (
    CALL_ITEMS,
    OUTPUT_ITEMS,
    Compaction,
    ComputerCall,
    ComputerCallOutput,
    FunctionTool,
    InputText,
    Item,
    ItemReference,
    McpListTools,
    Message,
    OtherTool,
    OutputText,
    Reasoning,
    Tool,
    answered_call,
    call_name,
    text_of,
)
from rollout.conversation import counted
from rollout.conversation import tokens as tok
from rollout.conversation.blocks import BLOCK, chain_hashes
from rollout.conversation.kinds import breakpoint_of, is_model_item
from rollout.conversation.memo import MEMO, Entry, Key
from rollout.conversation.render import (
    counted_as,
    framed_text,
    header_messages,
    messages_tokens,
    render,
    rendered,
)
from rollout.conversation.scan import findings as scan_findings
from rollout.conversation.work import Work

NO_CHOICE = ToolChoice()
TEXT_FORMAT = OutputFormat()
NO_CALLS: Mapping[str, int] = MappingProxyType({})


@attrs.define
class ScanState:
    tokens_scanned: int = 0
    findings: int = 0


@attrs.frozen
class Route:
    """Where sampling runs: the model and the engine the route pinned it to."""

    model: str
    engine: str


_TEXT_PARTS = (InputText, OutputText)  # (a message of one of these: counted by its text)
_HIDDEN = (Reasoning, Compaction)  # items whose prompt holds their hidden reasoning
_ANSWERS = (*OUTPUT_ITEMS, ComputerCallOutput)


@attrs.frozen
class Looked:
    """Items as the process's memo knows them (Context.look_up): each one's key (None: it
    holds images or files, which are counted for the model, never kept) and the memo's entry
    (None: a miss, or a text too short to keep)."""

    keys: list[Key | None]
    entries: list[Entry | None]

    def missing(self) -> list[int]:
        """The indices of the items the memo does not hold."""
        return [i for i, entry in enumerate(self.entries) if entry is None]


@attrs.define(eq=False)
class Context:
    items: list[Item] = attrs.field(factory=list)
    tokens: array[int] = attrs.field(factory=lambda: array("I"))
    header_len: int = 0
    header_key: bytes = b""
    instructions: str | None = None
    tools: tuple[Tool, ...] = ()
    function_tools: dict[str, FunctionTool] = attrs.field(factory=dict)
    custom_tools: dict[str, OtherTool] = attrs.field(factory=dict)  # `custom` tools, by name
    client_tools: frozenset[str] = frozenset()  # the built-in client tools offered, by type
    hosted: frozenset[str] = frozenset()  # the hosted tools the request offers, by name
    scan: ScanState = attrs.field(factory=ScanState)
    route: Route | None = None
    model: str = ""  # the model new items are counted for (images cost per model family)
    # The model is a real engine (it counts and caches the prompt): items' tokens and scan
    # findings come from the process's memo (rollout.conversation.memo) where it has them.
    memo: bool = False
    # The chain hashes of the prompt's completed 128-token blocks, hashed when first asked for
    # (`block_hashes`, `block_hash`): a real engine's context needs one for its route.
    _block_hashes: list[int] = attrs.field(factory=list)
    # Conversation state derived incrementally from the items (for validation and policies).
    by_id: dict[str, int] = attrs.field(factory=dict)
    call_names: dict[str, str] = attrs.field(factory=dict)
    open_calls: set[str] = attrs.field(factory=set)
    async_calls: set[str] = attrs.field(factory=set)  # open calls of async tools
    model_turns: int = 0
    last_was_model: bool = False
    last_was_hosted: bool = False
    last_user_text: str = ""
    calls_since_user: int = 0
    # Hosted calls since the latest user message, by tool (replaced, never changed in place).
    hosted_since_user: Mapping[str, int] = NO_CALLS
    item_tokens: list[int] = attrs.field(factory=list)  # rendered tokens of each item
    # Explicit prompt-cache breakpoints: (end of the item after the header, its ttl or None).
    body_breakpoints: list[tuple[int, str | None]] = attrs.field(factory=list)
    hidden: dict[str, str] = attrs.field(factory=dict)  # reasoning item id -> hidden reasoning
    # What the current request asks (set by the engine for each request) and how far the
    # current response got (reset per response; the loop counts).
    choice: ToolChoice = NO_CHOICE  # (frozen values: one default for every context)
    format: OutputFormat = TEXT_FORMAT
    response_steps: int = 0
    response_calls: int = 0
    agent: str | None = None  # the subagent whose context this is (a multi-agent response)
    team: bool = False  # the root's context of a multi-agent response (it may spawn agents)
    # MCP servers' tools listed for the current request (by server label), not yet in the
    # response's output (set by the engine before the loop, which emits them first).
    mcp_listed: dict[str, McpListTools] = attrs.field(factory=dict)

    # -- header: instructions and tools ---------------------------------------------------------

    def set_header(
        self, instructions: str | None, tools: Sequence[Tool], work: Work, *, scan: bool = True
    ) -> int:
        """Install instructions and tools; re-render only if they changed. Returns new tokens.

        Tools equal to the installed ones (as values: a chain turn decodes the same definitions
        anew) are recognized without encoding them, which costs fifty times the comparison. A
        context that counts from the memo finds there the header's messages (instructions and
        tools, each framed as an item is) that any context counted before: an agent's every
        first turn brings the same tools."""
        tools = tuple(tools)
        if instructions == self.instructions and tools == self.tools:
            return 0  # installed already (or, on a new context, no header to install)
        listed = codec.tools_json(tools)
        key = orjson.dumps([instructions, listed])
        if key == self.header_key:
            return 0
        self.header_key = key
        self.instructions = instructions
        self.tools = tools
        self.function_tools = {t.name: t for t in tools if isinstance(t, FunctionTool)}
        self.custom_tools = {
            str(t.raw.get("name")): t
            for t in tools
            if isinstance(t, OtherTool) and t.type == "custom"
        }
        self.client_tools = frozenset(
            t.type for t in tools if isinstance(t, OtherTool) and t.type in BUILTIN_CLIENT_TYPES
        )
        self.hosted = frozenset(
            HOSTED_BY_TYPE[t.type].name
            for t in tools
            if isinstance(t, OtherTool) and t.type in HOSTED_BY_TYPE
        )
        messages = header_messages(instructions, orjson.dumps(listed).decode() if tools else "")
        if self.memo:
            header, found = counted.header(messages, work, scan)
            if scan:
                self.scan.findings += found
                self.scan.tokens_scanned += len(header)
        else:
            with work.stage("tokenize", items=1) as c:
                header = messages_tokens(messages)
                c.tokens = len(header)
            if scan:
                text = "".join(framed_text(*m) for m in messages)
                self._scan(text, len(header), work, items=1)
        body = self.tokens[self.header_len :]
        self.header_len = len(header)
        header.extend(body)
        self.tokens = header
        self._block_hashes.clear()
        return self.header_len

    # -- items ----------------------------------------------------------------------------------

    def extend(
        self,
        items: Iterable[Item],
        work: Work,
        *,
        scan: bool = True,
        looked: Looked | None = None,
    ) -> int:
        """Add items at the end: scan (if input), render, tokenize. Returns the new token count.
        `looked`: what `look_up` found of the items, if the caller asked (a context that counts
        from the memo asks it).

        Cost is proportional to the new items only.
        """
        items = list(items)
        if not items:
            return 0
        tokens, start = self.tokens, len(self.tokens)
        item_tokens = self.item_tokens
        memo = self.memo
        unscanned: list[tuple[Item, Key | None, Entry]] = []  # (memo: findings not known yet)
        findings = 0
        with work.stage("tokenize", items=len(items)) as c:
            if memo:  # each item's memo entry, or counted now and kept (`_count`)
                looked = self.look_up(items) if looked is None else looked
                counted_items: Iterable[tuple[Item, Key | None, Entry | None]] = zip(
                    items, looked.keys, looked.entries, strict=True
                )
            else:
                done = [rendered(item, self.model, self._hidden(item)) for item in items]
                counted_items = [
                    (item, None, (ids, None)) for item, (_, ids) in zip(items, done, strict=True)
                ]
            # Each item on its own: the tokens of a conversation must not depend on how its
            # items were batched into requests (one append or several, chained or replayed).
            for item, key, entry in counted_items:
                if entry is None:
                    entry = self._count(item, key)
                counted = entry[0]
                item_tokens.append(len(counted))
                tokens.extend(counted)
                if memo and scan:
                    found = entry[1]
                    if found is None:
                        unscanned.append((item, key, entry))
                    else:
                        findings += found
                if type(item) is Message:  # without a breakpoint, at a glance (the commonest)
                    content = item.content
                    if type(content) is str or (
                        len(content) == 1
                        and getattr(content[0], "prompt_cache_breakpoint", None) is None
                    ):
                        continue
                mark = breakpoint_of(item)
                if mark is not None:
                    self.body_breakpoints.append((len(tokens) - self.header_len, mark.get("ttl")))
            added = c.tokens = len(tokens) - start
        if scan and memo:  # each text is framed: scanned one by one, it finds the same
            with work.stage("scan", items=len(items), tokens=added):
                self.scan.findings += findings + self._memo_findings(unscanned)
            self.scan.tokens_scanned += added
        elif scan:
            self._scan("".join(text for text, _ in done), added, work, items=len(items))
        self._note(items)
        return added

    def look_up(self, items: Sequence[Item]) -> Looked:
        """The items as the memo knows them (a context that counts from it)."""
        hidden = self._hidden
        keys: list[Key | None] = []
        add = keys.append
        for item in items:
            if type(item) is Message:  # (`counted_as`, at once for one text part)
                content = item.content
                if type(content) is not str and len(content) == 1:
                    part = content[0]
                    if type(part) in _TEXT_PARTS:
                        add((item.role, part.text))  # type: ignore[union-attr]
                        continue
                add(counted_as(item))
            else:
                add(counted_as(item, hidden(item)))
        return Looked(keys, MEMO.lookup(keys))

    def _count(self, item: Item, key: Key | None) -> Entry:
        """An item the memo does not hold: its tokens counted now (and kept, if it has a key)."""
        if key is None:
            return (rendered(item, self.model, self._hidden(item))[1], None)
        return counted.counted(key)

    def _memo_findings(self, unscanned: list[tuple[Item, Key | None, Entry]]) -> int:
        """The scan findings of the items whose memo entry lacks them: each item's framed text
        scanned (and kept)."""
        total = 0
        for item, key, entry in unscanned:
            if key is None:
                total += scan_findings(self._render(item))
            else:
                total += counted.findings(key, entry)
        return total

    def _hidden(self, item: Item) -> str:
        if type(item) is not Message and isinstance(item, _HIDDEN) and item.id is not None:
            return self.hidden.get(item.id, "")
        return ""

    def _render(self, item: Item) -> str:
        return render(item, self._hidden(item))

    def _scan(self, text: str, tokens: int, work: Work, items: int) -> None:
        """The safety scan: a real pass over every new character, counted in tokens."""
        with work.stage("scan", items=items, tokens=tokens):
            found = scan_findings(text)
        self.scan.findings += found
        self.scan.tokens_scanned += tokens

    def _note(self, items: list[Item]) -> None:
        """The conversation's state after each item (a message, the commonest item, at once)."""
        user: Message | None = None
        by_id, kept = self.by_id, self.items
        for item in items:
            if type(item) is not Message:
                self._note_item(item)
                continue
            if item.id is not None:
                by_id[item.id] = len(kept)
            kept.append(item)
            role = item.role
            model = role == "assistant"  # (is_model_item's)
            if model and (not self.last_was_model or self.last_was_hosted):
                self.model_turns += 1
            self.last_was_model = model
            self.last_was_hosted = False
            if role == "user":
                user = item
                self.calls_since_user = 0
                self.hosted_since_user = NO_CALLS
        if user is not None:  # (only the last one's text is kept)
            self.last_user_text = text_of(user.content)

    def _note_item(self, item: Item) -> None:
        index = len(self.items)
        self.items.append(item)
        if isinstance(item, ItemReference):
            return
        if item.id is not None:
            self.by_id[item.id] = index
        model = is_model_item(item)
        # A model step is a run of model items; a hosted call ends its step (the loop streams
        # hosted calls last in a step and samples again after them).
        if model and (not self.last_was_model or self.last_was_hosted):
            self.model_turns += 1
        self.last_was_model = model
        hosted = HOSTED_BY_ITEM.get(type(item))
        self.last_was_hosted = hosted is not None and hosted.model
        if isinstance(item, CALL_ITEMS):
            self.call_names[item.call_id] = call_name(item)
            self.open_calls.add(item.call_id)
            self.calls_since_user += 1
            if getattr(item, "async_", None):
                self.async_calls.add(item.call_id)
        elif isinstance(item, _ANSWERS):
            call_id = item.call_id if isinstance(item, ComputerCallOutput) else answered_call(item)
            self.open_calls.discard(call_id)
            self.async_calls.discard(call_id)
        elif hosted is not None:
            if isinstance(item, ComputerCall):  # the client runs it: open until its output
                self.call_names[item.call_id] = hosted.name
                self.open_calls.add(item.call_id)
            done = self.hosted_since_user
            self.hosted_since_user = {**done, hosted.name: done.get(hosted.name, 0) + 1}

    @property
    def block_hashes(self) -> list[int]:
        """The chain hash of each completed 128-token block of the prompt (the prefix cache's
        keys); read only."""
        return self._hashed(len(self.tokens) // BLOCK)

    def block_hash(self, index: int) -> int | None:
        """The chain hash of block `index` (None: the prompt has not completed it), hashing
        no block after it."""
        if index >= len(self.tokens) // BLOCK:
            return None
        return self._hashed(index + 1)[index]

    def _hashed(self, blocks: int) -> list[int]:
        """The block hashes, with (at least) the first `blocks` of them made."""
        return chain_hashes(self.tokens, self._block_hashes, blocks)

    # -- queries --------------------------------------------------------------------------------

    @property
    def token_count(self) -> int:
        """The prompt's tokens, as usage counts them: the context's and the reply's priming."""
        return len(self.tokens) + tok.REPLY_PRIMING if self.tokens else 0

    @property
    def web_search(self) -> bool:
        """Whether the request offers the web-search tool."""
        return WEB_SEARCH_TOOL.name in self.hosted

    @property
    def searches_since_user(self) -> int:
        """Web searches since the latest user message."""
        return self.hosted_since_user.get(WEB_SEARCH_TOOL.name, 0)

    @property
    def breakpoints(self) -> list[tuple[int, str | None]]:
        """Explicit cache breakpoints as prompt positions (token counts), oldest first."""
        return [(self.header_len + pos, ttl) for pos, ttl in self.body_breakpoints]

    def prefix_hash(self, position: int) -> int:
        """A hash of the first `position` prompt tokens (not rounded to a block)."""
        full = position // BLOCK
        prev = self._hashed(full)[full - 1] if full else 0
        tail = memoryview(self.tokens)[full * BLOCK : position].tobytes()
        return hash(("breakpoint", prev, tail))

    def is_async(self, name: str) -> bool:
        """Whether the function tool `name` is declared `async: true`."""
        tool = self.function_tools.get(name)
        return tool is not None and bool(tool.async_)

    def resolve(self, ref: ItemReference) -> Item | None:
        index = self.by_id.get(ref.id)
        return None if index is None else self.items[index]

    def fork(self) -> Context:
        """An independent copy (for continuing one parent twice); O(context), used rarely."""
        return attrs.evolve(
            self,
            items=list(self.items),
            tokens=array("I", self.tokens),
            scan=attrs.evolve(self.scan),
            block_hashes=list(self._block_hashes),
            by_id=dict(self.by_id),
            call_names=dict(self.call_names),
            open_calls=set(self.open_calls),
            async_calls=set(self.async_calls),
            function_tools=dict(self.function_tools),
            custom_tools=dict(self.custom_tools),
            item_tokens=list(self.item_tokens),
            body_breakpoints=list(self.body_breakpoints),
            hidden=dict(self.hidden),
        )
