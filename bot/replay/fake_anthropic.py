"""A minimal fake of the Anthropic HTTP API on loopback, for tests and offline demos.

The real ``anthropic.Anthropic`` client talks to it unchanged (``base_url=fake.url``), so tests
exercise the SDK's own request building, error mapping and timeouts. It records every request and
supports fault injection (error statuses, slow answers). Routing is a small dispatch table keyed
by ``(method, path)``, so ``POST /v1/messages`` can be added as one more handler later.

    with FakeAnthropicAPI() as fake:
        client = anthropic.Anthropic(api_key="test-key", base_url=fake.url)
        client.messages.count_tokens(model="claude-opus-4-8", messages=[...])
        fake.requests[-1].body

Answers:

* ``POST /v1/messages``: the cassette's next response, else the offline model
  (``bot.fake_claude``), with ``usage`` from a simulated prompt cache; a request that breaks one
  of the API's documented rules (``chanctx.bot.messages_api.request_rules``) gets the real API's 400
  ``invalid_request_error`` (413 ``request_too_large`` past 32 MB), listed in ``rejected``;
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": FRAME_TOKENS + n}`` where ``n`` is the
  offline count (``default_counter("claude-opus-4-8")``) of all text in the messages and the
  system prompt, concatenated;
* anything else: 404 with an Anthropic-style error body.

A request without an ``x-api-key`` header (or a bearer token) gets 401 ``authentication_error``
first, as the real API answers; every error body carries its ``request_id`` (also the
``request-id`` header): ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Final

from chanctx.bot.messages_api.request_rules import problems
from chanctx.bot.replay._loopback import LoopbackServer
from chanctx.bot.replay.fake_claude import MessagesEndpoint
from chanctx.context.tokens import default_counter

__all__ = ["FRAME_TOKENS", "FakeAnthropicAPI", "Fault", "RecordedRequest"]

# The fixed per-request overhead the fake adds to every count (the real API adds one too).
FRAME_TOKENS: Final = 7
# Headers that carry credentials: never recorded.
_SECRET_HEADERS: Final = frozenset({"x-api-key", "authorization"})
# Anthropic's error "type" for each status the fake can produce.
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names, credentials removed
    body: Any  # the parsed JSON body, or None


@dataclass(frozen=True)
class Fault:
    """What to do to one request instead of (or before) answering it normally."""

    status: int | None = None  # answer with this error status
    delay: float = 0.0  # sleep this long first
    retry_after: float | None = None  # Retry-After header on the error answer


@dataclass(frozen=True)
class _Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


_Handler = Callable[[Any], _Reply]


def _error(status: int, message: str) -> _Reply:
    kind = _ERROR_TYPES.get(status, "api_error")
    return _Reply(status, {"type": "error", "error": {"type": kind, "message": message}})


def _texts(value: Any) -> list[str]:
    """All text in a messages/system payload: strings and ``{"type": "text", "text": ...}``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, dict):
        if value.get("type") == "text" and isinstance(value.get("text"), str):
            return [value["text"]]
        return _texts(value.get("content", []))
    return []


def _count_tokens(body: Any) -> _Reply:
    if not isinstance(body, dict) or "model" not in body or "messages" not in body:
        return _error(400, "count_tokens needs 'model' and 'messages'")
    text = "".join(_texts(body.get("system", [])) + _texts(body["messages"]))
    counter = default_counter("claude-opus-4-8")
    return _Reply(200, {"input_tokens": FRAME_TOKENS + counter.count(text)})


class FakeAnthropicAPI(LoopbackServer):
    """A threaded HTTP server on 127.0.0.1 (a free port) answering like the Anthropic API."""

    def __init__(
        self,
        *,
        cassette: Sequence[dict[str, Any]] = (),
        clock: Callable[[], float] = time.monotonic,
        port: int = 0,
        latency_ms: int = 0,
    ) -> None:
        """``cassette``: Messages API response bodies served in order to ``POST /v1/messages``;
        after them (or without one) the offline model answers. ``clock`` times the prompt cache."""
        self.requests: list[RecordedRequest] = []
        self.rejected: list[list[str]] = []  # what each refused Messages request broke
        self.messages = MessagesEndpoint(cassette, clock=clock)
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._routes: dict[tuple[str, str], _Handler] = {
            ("POST", "/v1/messages/count_tokens"): _count_tokens,
            ("POST", "/v1/messages"): self._answer,
        }
        self._latency = latency_ms / 1000
        self._listen(self._handler_class(), name="fake-anthropic", port=port)
        self.url = self.origin

    def _answer(self, body: Any) -> _Reply:
        # The real API's documented rules, enforced: a request it would refuse is refused here.
        wrong = problems(body) if isinstance(body, dict) else ["the body must be a JSON object"]
        if wrong:
            with self._lock:
                self.rejected.append(wrong)
            too_large = any(w.startswith("request_too_large") for w in wrong)
            return _error(413 if too_large else 400, "; ".join(wrong))
        if self._latency:  # `chanctx fakes --anthropic-latency-ms`: a model that takes time
            time.sleep(self._latency)
        return _Reply(*self.messages(body))

    # --- fault injection -----------------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 500, retry_after: float | None = None) -> None:
        """Answer the next ``n`` requests with ``status`` (an Anthropic-style error body)."""
        with self._lock:
            self._faults.extend(Fault(status=status, retry_after=retry_after) for _ in range(n))

    def slow_next(self, n: int = 1, *, seconds: float) -> None:
        """Sleep ``seconds`` before answering each of the next ``n`` requests."""
        with self._lock:
            self._faults.extend(Fault(delay=seconds) for _ in range(n))

    def route(self, method: str, path: str, handler: _Handler) -> None:
        """Add or replace the handler for ``method path`` (it gets the parsed JSON body)."""
        self._routes[(method.upper(), path)] = handler

    @property
    def count(self) -> int:
        """How many requests arrived so far."""
        with self._lock:
            return len(self.requests)

    # --- lifecycle -----------------------------------------------------------------------

    # --- serving -------------------------------------------------------------------------

    def _serve(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, *, keyed: bool = True
    ) -> _Reply:
        """One request's answer; every error body carries the ``request_id`` its header names,
        as Anthropic's do. ``keyed``: an ``x-api-key`` (or a bearer token) came with it."""
        request_id = f"req_fake_{next(self._ids):06d}"
        reply = self._route(method, path, headers, raw, keyed=keyed)
        reply.headers["request-id"] = request_id
        if isinstance(reply.body, dict) and reply.body.get("type") == "error":
            reply = _Reply(reply.status, {**reply.body, "request_id": request_id}, reply.headers)
        return reply

    def _route(
        self, method: str, path: str, headers: dict[str, str], raw: bytes, *, keyed: bool
    ) -> _Reply:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(RecordedRequest(method, path, headers, body))
            fault = self._faults.popleft() if self._faults else None
        if not keyed:  # checked first, as the real API does
            return _error(401, "x-api-key header is required")
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and fault.status is not None:
            reply = _error(fault.status, f"injected fault: HTTP {fault.status}")
            if fault.retry_after is not None:
                reply.headers["retry-after"] = f"{fault.retry_after:g}"
            return reply
        handler = self._routes.get((method, path.split("?", 1)[0]))
        if handler is None:
            return _error(404, f"no route for {method} {path}")
        if raw and body is None:
            return _error(400, "request body is not valid JSON")
        return handler(body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {
                    k.lower(): v
                    for k, v in self.headers.items()
                    if k.lower() not in _SECRET_HEADERS
                }
                bearer = self.headers.get("authorization", "").startswith("Bearer ")
                keyed = bool(self.headers.get("x-api-key")) or bearer
                reply = fake._serve(self.command, self.path, headers, raw, keyed=keyed)
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status, HTTPStatus(reply.status).phrase)
                except ValueError:  # 529 is not in http.HTTPStatus
                    self.send_response(reply.status, "Overloaded")
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                # The client may have given up (a timeout test): nothing left to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler
