"""Slack's message markup, rendered as the plain text a model reads.

Slack escapes ``&``, ``<`` and ``>`` and wraps mentions, channels and links in angle brackets
(https://api.slack.com/reference/surfaces/formatting). The raw text stays on the Message; this
rendering is what goes into ChannelSnapshot / ThreadContext.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["render_slack_text"]

_ANGLE = re.compile(r"<([^<>]*)>")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}


def _unescape(text: str) -> str:
    # &amp; last, so "&amp;lt;" becomes the literal "&lt;" Slack meant, not "<".
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def _link(target: str, label: str | None) -> str:
    url = _unescape(target)
    if label is None:
        return url
    label = _unescape(label)
    bare = url.removeprefix("mailto:").removeprefix("tel:")
    if label in (url, bare):
        return label
    return f"{label} ({url})"


def _render_token(body: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    target, _, label = body.partition("|")
    label_or_none = label if label else None
    if target.startswith("@"):
        user_id = target[1:]
        return "@" + users.get(user_id, _unescape(label) if label else user_id)
    if target.startswith("#"):
        channel_id = target[1:]
        return "#" + (_unescape(label) if label else channels.get(channel_id, channel_id))
    if target.startswith("!"):
        command = target[1:]
        if command in _SPECIAL:
            return _SPECIAL[command]
        # <!subteam^S123|@team>, <!date^...|fallback>: the label is what a person sees.
        if label:
            return _unescape(label)
        return "@" + command.split("^", 1)[0]
    return _link(target, label_or_none)


def render_slack_text(
    raw: str,
    *,
    users: Mapping[str, str] | None = None,
    channels: Mapping[str, str] | None = None,
) -> str:
    """Render Slack markup: ``<@U1>`` -> ``@Name``, ``<#C1|general>`` -> ``#general``,
    ``<https://x|docs>`` -> ``docs (https://x)``, and ``&lt; &gt; &amp;`` unescaped.

    Unknown user ids stay as ids: a wrong name is worse than an opaque one.
    """
    user_names = users or {}
    channel_names = channels or {}
    parts: list[str] = []
    last = 0
    for match in _ANGLE.finditer(raw):
        parts.append(_unescape(raw[last : match.start()]))
        parts.append(_render_token(match.group(1), user_names, channel_names))
        last = match.end()
    parts.append(_unescape(raw[last:]))
    return "".join(parts)
