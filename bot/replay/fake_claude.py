"""``POST /v1/messages`` for the fake Anthropic API: a cassette or the offline model.

Either way the answer's ``usage`` is estimated the same way, by simulating prompt caching from
the ``cache_control`` breakpoints the request carries: the longest prefix ending at a breakpoint
that an earlier request wrote is read from the cache; the rest up to the last breakpoint is
written; everything after it is plain input. That makes the replay report's
``cache_read_input_tokens`` say how much of the context package was re-sent from the cache.

The offline model is deterministic and makes no network call: asked a question, it calls
``channel_context`` with it, then answers with the best messages the tool found, cited and
marked as offline.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chanctx.bot.slack.media_blocks import image_tokens
from chanctx.context.curator import statements
from chanctx.context.tokens import TokenCounter, default_counter
from chanctx.tools import read_context_output

__all__ = ["OFFLINE_MARK", "MessagesEndpoint", "PromptCacheSim"]

OFFLINE_MARK = "_(offline model: no Claude call was made)_"
_CACHE_TTL = 300.0  # Anthropic's default ephemeral cache lifetime
_TTLS = {"5m": 300.0, "1h": 3600.0}
_MIN_CACHEABLE = 1024  # prefixes shorter than this are not cached (most models)
_LOOKBACK = 20  # blocks before a breakpoint the API also checks for a cached prefix
_MENTION = re.compile(r"<@[A-Z0-9]+>|@chanctx\b")
# A message in a context package's JSON (snapshot or thread): its author's name and text.
_HELD_MESSAGE = (
    r'"message_id":"{ts}","ts":"[^"]*","author":\{{"user_id":"[^"]*",'
    r'"display_name":"(?P<who>(?:[^"\\]|\\.)*)","is_bot":(?:true|false)\}},'
    r'"(?:text|snippet)":"(?P<text>(?:[^"\\]|\\.)*)"'
)


def _ttl(block: dict[str, Any]) -> float | None:
    """The cache lifetime a breakpoint asks for (seconds), or None when the block is not one."""
    control = block.get("cache_control")
    if not isinstance(control, dict):
        return None
    return _TTLS.get(str(control.get("ttl", "5m")), _CACHE_TTL)


def _canonical(block: dict[str, Any]) -> str:
    # A breakpoint marker is not content: moving it must not change the cached prefix.
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


def _segments(body: dict[str, Any]) -> list[tuple[str, float | None]]:
    """The request in cache order (tools, system, messages) as (canonical JSON, breakpoint)."""
    out: list[tuple[str, float | None]] = []
    for tool in body.get("tools") or []:
        out.append((_canonical(tool), _ttl(tool)))
    system = body.get("system") or []
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        out.append((_canonical(block), _ttl(block)))
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            out.append(
                (
                    message.get("role", "") + _canonical(block),
                    _ttl(block),
                )
            )
    return out


@dataclass
class PromptCacheSim:
    counter: TokenCounter = field(default_factory=default_counter)
    clock: Callable[[], float] = time.monotonic
    min_cacheable: int = _MIN_CACHEABLE
    _entries: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _tokens(self, canonical: str) -> int:
        # Images cost vision tokens by their size, not by the length of their base64 text.
        if '"type": "image"' in canonical and '"data": ' in canonical:
            block = json.loads(canonical[canonical.index("{") :])
            data = (block.get("source") or {}).get("data")
            if isinstance(data, str):
                return image_tokens(base64.b64decode(data))
        return self.counter.count(canonical)

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        segments = _segments(body)
        tokens = [self._tokens(text) for text, _ in segments]
        total = sum(tokens)
        # The prefix hash and size after every block, and which blocks are breakpoints.
        prefixes: list[tuple[str, int]] = []
        digest, size = hashlib.sha256(), 0
        for (text, _), count in zip(segments, tokens, strict=True):
            digest.update(text.encode())
            size += count
            prefixes.append((digest.hexdigest(), size))
        breaks = [(index, ttl) for index, (_, ttl) in enumerate(segments) if ttl is not None]
        now = self.clock()
        with self._lock:
            # Like the API, look for a cached prefix at each breakpoint and at the blocks up to
            # _LOOKBACK before it, so last turn's cache is found after new blocks were added.
            read = 0
            for index, ttl in breaks:
                for back in range(index, max(index - _LOOKBACK, -1), -1):
                    key, length = prefixes[back]
                    if self._entries.get(key, -1.0) > now:
                        read = max(read, length)
                        self._entries[key] = now + ttl  # a read refreshes the lifetime
                        break
            written = 0
            for index, ttl in breaks:
                key, length = prefixes[index]
                if length > read and length >= self.min_cacheable:
                    self._entries[key] = now + ttl
                    written = length - read
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def _question(messages: Sequence[dict[str, Any]]) -> str:
    """The newest question: the last text block of the last user message that has text."""
    for message in reversed(messages):
        if message.get("role") != "user" or isinstance(message.get("content"), str):
            text = _text_of(message.get("content"))
        else:
            texts = [
                b.get("text", "") for b in message.get("content", []) if b.get("type") == "text"
            ]
            text = texts[-1] if texts else ""
        if message.get("role") == "user" and text.strip():
            line = text.strip().splitlines()[-1]
            return _MENTION.sub(
                "", line.split(": ", 1)[-1] if line.startswith("[") else line
            ).strip()
    return ""


def _held(body: dict[str, Any], ts: str) -> tuple[str, str] | None:
    """(who, text) of message ``ts`` as the request's context package gives it (a search
    result [ts, "in context"] names a message the model already holds there)."""
    found = re.compile(_HELD_MESSAGE.format(ts=re.escape(ts)))
    for message in body.get("messages") or []:
        match = found.search(_text_of(message.get("content")))
        if match:
            return json.loads(f'"{match["who"]}"'), json.loads(f'"{match["text"]}"')
    return None


def _answer_from_tool(result_text: str, question: str, body: dict[str, Any]) -> str:
    try:
        rows = read_context_output(result_text)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        rows = []
    results: list[tuple[str, str, str]] = []
    for row in rows:
        if row["held"]:
            held = _held(body, str(row["ts"]))
            if held is not None:
                results.append((held[0], str(row["ts"]), held[1]))
        else:
            results.append((str(row["who"]), str(row["when"]), str(row["text"])))
    if not results:
        return f"I could not find anything in this channel about “{question}”.\n{OFFLINE_MARK}"
    lines = [f"Here is what this channel says about “{question}”:"]
    for who, when, text in results[:3]:
        lines.append(f"• {who} ({when}): {' '.join(text.split())[:280]}")
    lines.append(OFFLINE_MARK)
    return "\n".join(lines)


_CURATOR_TOOL = "propose_playbook_deltas"
_LINE = re.compile(r"^\[(\d{10}\.\d{6})\] (?:\([^)]*\) )?[^:]{1,80}: (.*)$")
_BULLET = re.compile(r"^\[([a-z]+-\d{5})\] helpful=\d+ harmful=\d+ :: (.*)$")
_WORDS = re.compile(r"[a-z0-9][a-z0-9_-]+")
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "what",
        "who",
        "how",
        "does",
        "did",
        "is",
        "it",
        "in",
        "on",
        "of",
        "to",
        "do",
        "we",
        "our",
    ]
)


def _curated(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The curator's forced tool call, answered by the offline rules over the lines shown."""
    deltas = []
    for line in _text_of((body.get("messages") or [{}])[-1].get("content")).splitlines():
        found = _LINE.match(line)
        if not found:
            continue
        for section, subject, sentence in statements(found[2]):
            delta: dict[str, Any] = {"op": "ADD", "section": section, "content": sentence,
                                     "message_ts": [found[1]]}  # fmt: skip
            if subject:
                delta["subject"] = subject
            deltas.append(delta)
    call_id = hashlib.sha256(json.dumps(deltas).encode()).hexdigest()[:12]
    return [{"type": "tool_use", "id": f"toolu_offline_{call_id}", "name": _CURATOR_TOOL,
             "input": {"deltas": deltas}}]  # fmt: skip


def _playbook_lines(messages: Sequence[dict[str, Any]], question: str) -> list[str]:
    """Playbook bullets the conversation holds that share two words with the question (or
    every word of a short one), cited by id as the system prompt asks."""
    asked = {w for w in _WORDS.findall(question.casefold()) if w not in _COMMON}
    lines: list[str] = []
    for message in messages:
        for block in message.get("content") or []:
            text = block.get("text", "") if isinstance(block, dict) else ""
            if not text.startswith("CHANNEL PLAYBOOK"):
                continue
            for line in text.splitlines():
                bullet = _BULLET.match(line)
                if bullet is None:
                    continue
                shared = asked & set(_WORDS.findall(bullet[2].casefold()))
                if len(shared) >= min(2, len(asked)) and shared:
                    lines.append(f"• [{bullet[1]}] {bullet[2]}")
    return lines[:3]


class OfflineModel:
    """Deterministic stand-in for Claude: search with the question, answer with what was found
    (and with the playbook bullets that match it, cited by id).

    ``max_results`` is what it asks channel_context for (a benchmark may ask for more).
    """

    def __init__(self, max_results: int = 5) -> None:
        self.max_results = max_results

    def respond(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        choice = body.get("tool_choice") or {}
        if isinstance(choice, dict) and choice.get("name") == _CURATOR_TOOL:
            return _curated(body), "tool_use"
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        content = last.get("content")
        blocks: list[Any] = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        question = _question(messages[:-1] if results else messages)
        if "summarize" in _text_of(body.get("system")).lower():
            summary = " ".join(_text_of(m.get("content")).split(". ")[0] for m in messages)[:1200]
            return [{"type": "text", "text": f"Summary: {summary}"}], "end_turn"
        if results:
            content = results[-1].get("content")
            text = _answer_from_tool(_text_of(content), question, body)
            learned = _playbook_lines(messages, question)
            if learned:
                text = "From this channel's playbook:\n" + "\n".join(learned) + "\n" + text
            return [{"type": "text", "text": text}], "end_turn"
        tools = {t.get("name") for t in body.get("tools") or []}
        if "channel_context" in tools and question:
            call = {
                "type": "tool_use",
                "id": f"toolu_offline_{hashlib.sha256(question.encode()).hexdigest()[:12]}",
                "name": "channel_context",
                "input": {"intent": question, "max_results": self.max_results},
            }
            return [call], "tool_use"
        return [
            {"type": "text", "text": f"I have no tools to look this up.\n{OFFLINE_MARK}"}
        ], "end_turn"


class MessagesEndpoint:
    """Answers ``POST /v1/messages`` bodies: from ``cassette`` in order, then the offline model."""

    def __init__(
        self,
        cassette: Sequence[dict[str, Any]] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
        counter: TokenCounter | None = None,
    ) -> None:
        self._cassette = list(cassette)
        self._served = 0
        self.model = OfflineModel()
        self.cache = PromptCacheSim(counter=counter or default_counter(), clock=clock)
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> tuple[int, dict[str, Any]]:
        if (
            not isinstance(body, dict)
            or not body.get("model")
            or not isinstance(body.get("messages"), list)
        ):
            return 400, {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "messages: 'model' and a 'messages' list are required",
                },
            }
        with self._lock:
            self._served += 1
            number = self._served
            recorded = self._cassette.pop(0) if self._cassette else None
        usage = self.cache.usage(body)
        if recorded is not None:
            response = dict(recorded)
        else:
            content, stop = self.model.respond(body)
            response = {
                "id": f"msg_offline_{number:04d}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
            }
        output = sum(self.cache.counter.count(json.dumps(b)) for b in response.get("content", []))
        response["usage"] = {**usage, "output_tokens": output}
        return 200, response
