# A role's text counted from the process's memo (rollout.conversation.memo), as a context that
# counts from it does: its tokens (framed as the chat format frames a message) and its scan
# findings, each the memo's where it has them, else made now and kept there. An item with a key
# and the header's messages (the instructions, the tools) are counted so.
from __future__ import annotations

from array import array

from rollout.conversation import tokens as tok
from rollout.conversation.memo import MEMO, Entry, Key
from rollout.conversation.render import framed_text
from rollout.conversation.scan import findings as scan_findings
from rollout.conversation.work import Work


def counted(key: Key) -> Entry:
    """A role's text the memo does not hold: its tokens counted now (and kept)."""
    entry: Entry = (tok.framed(key[0], tok.encoded(key[1])), None)
    MEMO.put(key, entry)
    return entry


def findings(key: Key, entry: Entry) -> int:
    """The scan findings of a role's framed text, whose memo entry lacks them (kept)."""
    found = scan_findings(framed_text(*key))
    MEMO.put(key, (entry[0], found))
    return found


def header(messages: list[Key], work: Work, scan: bool) -> tuple[array[int], int]:
    """The header's tokens and, if `scan`, its scan findings (each message framed: scanned one
    by one, they find what the whole header's text would)."""
    tokens = array("I")
    entries: list[Entry] = []
    with work.stage("tokenize", items=1) as c:
        for key, entry in zip(messages, MEMO.lookup(messages), strict=True):
            if entry is None:
                entry = counted(key)
            tokens.extend(entry[0])
            entries.append(entry)
        c.tokens = len(tokens)
    found = 0
    if scan:
        with work.stage("scan", items=1, tokens=len(tokens)):
            for key, entry in zip(messages, entries, strict=True):
                found += findings(key, entry) if entry[1] is None else entry[1]
    return tokens, found


__all__ = ["counted", "findings", "header"]
