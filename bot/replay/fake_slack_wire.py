"""The fake Slack Web API's wire: what it records of each call, the faults it injects, how it
reads a request (form-encoded, JSON or multipart, Slack-shaped ts and cursors, the text rules of
``chat.postMessage``) and how it writes a reply."""

from __future__ import annotations

import base64
import binascii
import contextlib
import email.parser
import email.policy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Final
from urllib.parse import parse_qsl

from chanctx.bot.replay.fake_stream import SlackError

__all__ = [
    "MARKDOWN_TEXT_LIMIT",
    "MICROS",
    "TEXT_LIMIT",
    "UPDATE_TEXT_LIMIT",
    "Fault",
    "RecordedCall",
    "RecordedReaction",
    "RecordedStatus",
    "Reply",
    "cursor_position",
    "decode_cursor",
    "encode_cursor",
    "fault_reply",
    "handler_class",
    "int_param",
    "message_text",
    "oauth_access",
    "parse_body",
    "truthy",
    "ts_value",
]

MARKDOWN_TEXT_LIMIT = 12_000  # chat.postMessage markdown_text
TEXT_LIMIT = 40_000  # chat.postMessage keeps 40,000 characters of text, warning of the rest
UPDATE_TEXT_LIMIT = 4_000  # chat.update refuses longer text (msg_too_long)

MICROS: Final = 1_000_000


@dataclass(frozen=True)
class RecordedCall:
    method: str
    params: dict[str, Any]  # query + body, without any "token" field
    authed: bool  # a well-formed bot/user token came in the Authorization header


@dataclass(frozen=True)
class RecordedReaction:
    channel: str
    ts: str
    name: str
    added: bool  # reactions.add (True) or reactions.remove (False)


@dataclass(frozen=True)
class RecordedStatus:
    channel: str
    thread_ts: str
    status: str


@dataclass
class Fault:
    method: str  # "*" matches any method
    remaining: int
    status: int | None = None
    retry_after: float | None = None
    error: str | None = None
    delay: float = 0.0
    applied: bool = False  # the call is carried out first, then fails (a lost answer)


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any  # a JSON value, or bytes sent as they are
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def ts_value(ts: Any) -> Decimal:
    # Decimal compares Slack ts exactly; params may also be "0" or "1700000000" (no fraction).
    try:
        value = Decimal(str(ts))
    except InvalidOperation:
        raise SlackError("invalid_ts_latest") from None
    if not value.is_finite():
        raise SlackError("invalid_ts_latest")
    return value


def int_param(params: Mapping[str, Any], name: str, default: int, cap: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise SlackError("invalid_arguments") from None
    return default if value <= 0 else min(value, cap)


def message_text(params: Mapping[str, Any]) -> str:
    """The text of a chat.postMessage, under Slack's documented rules: ``markdown_text`` (at
    most 12,000 characters) never with ``text`` or ``blocks``; some content is required."""
    markdown = params.get("markdown_text")
    if markdown is not None:
        if params.get("text") or params.get("blocks"):
            raise SlackError("markdown_text_conflict")
        if not isinstance(markdown, str) or not markdown.strip():
            raise SlackError("no_text")
        if len(markdown) > MARKDOWN_TEXT_LIMIT:
            raise SlackError("msg_too_long")
        return markdown  # Slack renders it; the stored text keeps what was posted
    if not any(params.get(k) for k in ("text", "blocks", "attachments")):
        raise SlackError("no_text")
    return str(params.get("text") or "")[:TEXT_LIMIT]  # Slack truncates, with a warning


def truthy(value: Any) -> bool:
    return value is True or str(value).lower() in {"1", "true"}


def encode_cursor(position: str, kind: str = "next_ts") -> str:
    """An opaque cursor, shaped as Slack's are: base64 of ``next_ts:<ts>`` (messages) or
    ``user:<id>`` (members)."""
    return base64.b64encode(f"{kind}:{position}".encode()).decode()


def cursor_position(cursor: str, kind: str = "next_ts") -> str:
    """What ``encode_cursor`` put in ``cursor``; ``invalid_cursor`` for anything else."""
    try:
        text = base64.b64decode(cursor, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise SlackError("invalid_cursor") from None
    if not text.startswith(f"{kind}:"):
        raise SlackError("invalid_cursor")
    return text.removeprefix(f"{kind}:")


def decode_cursor(cursor: str) -> Decimal:
    try:
        return ts_value(cursor_position(cursor))
    except SlackError:
        raise SlackError("invalid_cursor") from None


def parse_body(content_type: str, raw: bytes) -> dict[str, Any]:
    """Form-encoded, JSON or multipart: the three ways WebClient sends arguments."""
    if not raw:
        return {}
    if content_type.startswith("application/json"):
        body = json.loads(raw)
        return body if isinstance(body, dict) else {}
    if content_type.startswith("multipart/form-data"):
        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields: dict[str, Any] = {}
        for part in parsed.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = payload.decode("utf-8", "replace")
        return fields
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))


def oauth_access(
    auth: Mapping[str, Any], headers: Mapping[str, str], params: Mapping[str, Any]
) -> Reply:
    """``oauth.v2.access`` for a smoke test of the install flow: any client id and secret (HTTP
    Basic or form fields) and any ``code`` get the fixture's bot, shaped as Slack answers."""
    basic = headers.get("authorization", "")
    if not (basic.startswith("Basic ") or params.get("client_id")):
        return Reply(200, {"ok": False, "error": "invalid_client_id"})
    if not params.get("code"):
        return Reply(200, {"ok": False, "error": "invalid_code"})
    team = str(auth.get("team_id") or "T0FAKE0001")
    return Reply(
        200,
        {
            "ok": True,
            "app_id": "A0FAKEAPP1",
            "authed_user": {"id": "U0INSTALL1"},
            "scope": "app_mentions:read,channels:history,chat:write,reactions:write",
            "token_type": "bot",
            "access_token": f"xoxb-fake-{team}",
            "bot_user_id": str(auth.get("user_id") or ""),
            "team": {"id": team, "name": str(auth.get("team") or team)},
            "enterprise": None,
            "is_enterprise_install": False,
        },
    )


def fault_reply(fault: Fault) -> Reply:
    assert fault.status is not None
    if fault.status == 429:
        headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        return Reply(429, {"ok": False, "error": fault.error or "ratelimited"}, headers=headers)
    if fault.status >= 500:
        text = fault.error or f"injected fault: HTTP {fault.status}"
        return Reply(fault.status, text.encode(), "text/plain")
    return Reply(fault.status, {"ok": False, "error": fault.error or "invalid_request"})


def handler_class(
    serve: Callable[[str, str, Mapping[str, str], bytes], Reply],
) -> type[BaseHTTPRequestHandler]:
    """The HTTP handler that hands each request to ``serve`` and writes its reply."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = serve(self.command, self.path, headers, raw)
            payload = (
                reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            )
            try:
                self.send_response(reply.status, HTTPStatus(reply.status).phrase)
            except ValueError:
                self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            # The client may have given up (a timeout test): nothing left to answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(payload)

        do_GET = do_POST = _handle

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
