"""A thread session's scratchpad (isolating a bulky output, against distraction): a bulky
tool output is set aside instead of filling the conversation. The session keeps its first part
(what fits the threshold) and a handle; Claude reads the rest, a page at a time, with the
``scratchpad_read`` tool, only if it needs it.

It applies to ``channel_messages`` by default: a fetched thread or message list is raw history,
what distracts most. ``channel_context`` results are ranked and budgeted by the tool itself, so
cutting them after the best hits would only hide the next-best ones.

The scratchpad lives in memory with its session (the newest 20 outputs); after a restart a
handle is unknown and the tool says so, and Claude asks the original tool again.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from chanctx.tools import ToolResult

__all__ = ["SCRATCHPAD_READ", "SCRATCHPAD_TOOL", "Scratchpad"]

SCRATCHPAD_READ: Final = "scratchpad_read"
DEFAULT_THRESHOLD: Final = 1_500  # tokens: a longer tool output is set aside
_KEEP: Final = 20  # outputs a session's scratchpad holds
_HANDLE = re.compile(r"^sp-\d{1,6}$")
# Where a cut reads naturally: the end of a line, then of a JSON element, then of a word.
_BOUNDARIES: Final = ("\n", "},", "],", ", ", " ")

SCRATCHPAD_TOOL: Final[dict[str, Any]] = {
    "name": SCRATCHPAD_READ,
    "description": (
        "Read more of a long tool result that was set aside in this conversation's scratchpad. "
        "A result that was set aside ends with its handle and page count; ask for page 2 and "
        "on only when the first part is not enough."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "handle": {"type": "string", "description": "e.g. sp-1"},
            "page": {"type": "integer", "minimum": 2},
        },
        "required": ["handle", "page"],
    },
}


def _cut(text: str, fits: Callable[[str], bool]) -> int:
    """The length of a prefix of ``text`` that fits, ending at a natural boundary when one is
    near. Token counts mostly grow with length, not always (pieces merge where text is cut),
    so every candidate is checked, never assumed."""
    low, high = 0, len(text)
    while low < high:  # binary search on the length
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    if low == len(text):
        return low
    for boundary in _BOUNDARIES:
        at = text.rfind(boundary, 0, low)
        if at > low // 2 and fits(text[: at + len(boundary)]):
            return at + len(boundary)
    while low > 1 and not fits(text[:low]):
        low -= 1
    return max(low, 1)


class Scratchpad:
    """One session's set-aside tool outputs, as pages."""

    def __init__(self, count: Callable[[str], int], *, threshold: int = DEFAULT_THRESHOLD):
        self._count = count
        self._threshold = threshold
        self._pages: OrderedDict[str, list[str]] = OrderedDict()
        self._next = 1

    def set_aside(self, tool: str, content: str) -> str:
        """``content`` itself when it fits the threshold; else its first part and a handle."""
        if self._count(content) <= self._threshold:
            return content
        pages: list[str] = []
        rest = content
        while rest:
            size = _cut(rest, lambda part: self._count(part) <= self._threshold)
            pages.append(rest[:size])
            rest = rest[size:]
        handle = f"sp-{self._next}"
        self._next += 1
        self._pages[handle] = pages
        while len(self._pages) > _KEEP:
            self._pages.popitem(last=False)
        total = self._count(content)
        return (
            f"{pages[0]}\n[{tool} result set aside: {total:,} tokens in {len(pages)} pages; "
            f'this is page 1. Read more with scratchpad_read(handle="{handle}", page=2...'
            f"{len(pages)}) only if you need it.]"
        )

    def read(self, tool_input: object) -> ToolResult:
        if not isinstance(tool_input, dict):
            return ToolResult("scratchpad_read takes {handle, page}", is_error=True)
        handle, page = tool_input.get("handle"), tool_input.get("page")
        if not isinstance(handle, str) or not _HANDLE.match(handle):
            return ToolResult(f"handle: {str(handle)[:40]!r} is not a handle like sp-1", True)
        pages = self._pages.get(handle)
        if pages is None:
            return ToolResult(
                f"handle: {handle} is not in the scratchpad (expired or from before a restart); "
                "ask the original tool again",
                is_error=True,
            )
        if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= len(pages):
            return ToolResult(f"page: must be 1 to {len(pages)} for {handle}", is_error=True)
        more = f" (next: page {page + 1} of {len(pages)})" if page < len(pages) else " (last page)"
        return ToolResult(f"[{handle} page {page} of {len(pages)}{more}]\n{pages[page - 1]}")
