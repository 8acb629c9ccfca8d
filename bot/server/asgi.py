"""The ASGI app: Slack's events path, ``/healthz`` and ``/readyz``, plus any extra routes.

Bolt's ``App`` is synchronous and, with ``process_before_response``, records every event (and
fsyncs a question into the turn journal) before it answers; so dispatch runs in a worker thread,
never on the event loop. The events no listener answers (channel messages, edits, deletions,
reactions) skip it: the envelope, parsed once here, goes to the app's quick path
(``GuardedApp.quick``, bot/events/quick_intake.py), which stores them in batches and answers
each after its commit; the events path is served ahead of Starlette's middleware and router. Whatever a client sends gets a 2xx or a 4xx: headers too large (431),
a body too large (413), too slow (408), not UTF-8 or nested too deep (400), a bad signature
(401, checked on the bytes: ``signature.py``). An envelope that makes our own code fail is
logged in one line and acknowledged (200), so Slack does not retry a poison event forever; only
a failure to store (the disk) answers 503, so Slack retries what we could not keep.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final
from urllib.parse import parse_qs

from chanctx.bot.server.bodies import BodyRefused
from chanctx.bot.server.raw_events import read_head, receive_body, send_answer
from chanctx.bot.server.signature import BytesVerifier
from chanctx.bot.slack.envelope import (
    STORE_FAILED,
    GuardedApp,
    describe_error,
    parse_json_payload,
)
from chanctx.cache.channel_store import StoreUnavailable as DatabaseUnavailable
from chanctx.manifest_store import StoreUnavailable
from slack_bolt import App
from slack_bolt.adapter.starlette.handler import to_bolt_request, to_starlette_response
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

__all__ = ["MAX_BODY", "build_asgi_app"]

logger = logging.getLogger("chanctx.server")
MAX_BODY: Final = 1 << 20  # Slack's event payloads are far smaller; refuse anything huge
QUICK_BODY: Final = 64 * 1024  # bodies parsed on the event loop: any event Slack sends
MAX_HEADERS: Final = 16 * 1024  # Slack sends well under 2 KB of headers
BODY_TIMEOUT: Final = 10.0  # seconds to send a whole body: a slow client holds nothing longer


def _text(status: int, message: str) -> Response:
    return JSONResponse({"ok": False, "error": message}, status_code=status)


# What to answer a body Bolt must not parse: a status and the error to say (None: empty).
Refusal = tuple[int, str | None]


def _checked(body: bytes, content_type: str) -> tuple[Refusal | None, Any]:
    """(what to answer a body Bolt must not parse, or None; the JSON envelope when the body is
    one). Refused: not UTF-8 or not JSON (400), nested too deep (400), or an envelope Bolt
    would crash on (acknowledged and logged)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return (400, "body is not UTF-8"), None
    form = "form-urlencoded" in content_type
    if form:
        # Interactivity and commands: the JSON, if any, is in the ``payload`` field.
        fields = parse_qs(text, keep_blank_values=True)
        payloads = fields.get("payload")
        if not payloads:
            return None, None
        text = payloads[0]
    try:
        envelope, reason = parse_json_payload(text)
    except ValueError as error:
        return (400, f"body is not JSON: {str(error)[:200]}"), None
    if reason is not None:
        logger.warning("acknowledged and dropped a malformed payload: %s", reason)
        return (200, None), None
    return None, None if form else envelope


def _refusal(refused: Refusal) -> Response:
    status, error = refused
    return Response(status_code=status) if error is None else _text(status, error)


def _answer(bolt: App, request: Request, body: bytes, *, checked: bool) -> Response:
    """Bolt's dispatch, on a worker thread (after the body is checked, unless ``checked``
    says the event loop did that already)."""
    if not checked:
        refused, _ = _checked(body, request.headers.get("content-type", ""))
        if refused is not None:
            return _refusal(refused)
    try:
        try:
            bolt_request = to_bolt_request(request, body)
        except UnicodeDecodeError:
            return _text(400, "body is not UTF-8")
        except Exception as error:  # Bolt parses the body: JSON that is not an object, ...
            return _text(400, f"body is not a Slack payload ({type(error).__name__})")
        response = bolt.dispatch(bolt_request)
    except OSError as error:
        logger.warning("could not store an event (%s): Slack will retry it", describe_error(error))
        return _text(503, "could not store the event; retry")
    except Exception as error:
        logger.warning(
            "an event failed (%s); acknowledged so Slack does not retry it forever",
            describe_error(error),
        )
        logger.debug("event failure", exc_info=error)
        return Response(status_code=200)
    if response.status == STORE_FAILED:
        return _text(503, "could not store the event; retry")
    if response.status >= 500:
        # Bolt turned a failure of ours into a 5xx; the event is logged, not retried.
        logger.warning("acknowledging an event Bolt answered %d for", response.status)
        return Response(status_code=200)
    return to_starlette_response(response)


def build_asgi_app(
    bolt: App,
    *,
    signing_secret: str | None = None,
    ready: Callable[[], bool] = lambda: True,
    status: Callable[[], dict[str, Any]] | None = None,
    path: str = "/slack/events",
    extra_routes: Sequence[BaseRoute] = (),
    max_body: int = MAX_BODY,
    body_timeout: float = BODY_TIMEOUT,
) -> Starlette:
    """``ready``: whether the bot can answer yet (identity known, unfinished turns recovered;
    replicas: Redis answers, the change stream read); ``status``: more to say on ``/readyz``.
    ``signing_secret``: checked here first, so an unsigned body is a 401 whatever its shape
    (Bolt checks again; parsing what nobody signed is not our business)."""
    # The secret Bolt would check with, when none is given here: the quick path skips Bolt's
    # own check, so the same one runs here first.
    secret = signing_secret or (bolt.signing_secret if isinstance(bolt, GuardedApp) else None)
    verifier = BytesVerifier(secret) if secret else None
    bolt_verifies = not isinstance(bolt, GuardedApp) or bolt.signing_secret is not None
    # Taken only where the signature was checked here, or Bolt checks none either.
    quick = bolt.quick if isinstance(bolt, GuardedApp) else None
    if verifier is None and bolt_verifies:
        quick = None

    async def events(scope: Scope, receive: Receive, send: Send) -> None:
        head = read_head(scope)
        if head.size > MAX_HEADERS:
            await send_answer(send, 431, f"headers larger than {MAX_HEADERS} bytes")
            return
        try:
            body = await receive_body(receive, head, max_body, body_timeout)
        except BodyRefused as unread:
            await send_answer(send, unread.status, unread.reason)
            return
        if verifier is not None and not verifier.is_valid(body, head.timestamp, head.signature):
            await send_answer(send, 401, "invalid or stale signature")
            return
        checked = False
        if (
            quick is not None
            and len(body) <= QUICK_BODY
            and "form-urlencoded" not in head.content_type
        ):
            # An event's envelope (a few KB) is parsed here, once; what the quick path does
            # not take goes to Bolt.
            refused, envelope = _checked(body, head.content_type)
            if refused is not None:
                await send_answer(send, *refused)
                return
            checked = True
            if isinstance(envelope, dict):
                try:
                    status = await quick.take(envelope)
                except Exception as error:  # ours, not the client's: logged, acknowledged
                    logger.warning("an event failed (%s); acknowledged", describe_error(error))
                    status = 200
                if status is not None:
                    if status == STORE_FAILED:
                        await send_answer(send, 503, "could not store the event; retry")
                    else:
                        await send_answer(send, status)
                    return
        # Bolt's dispatch, off the event loop: a large body nested thousands deep takes a
        # while to refuse, and /healthz must not wait for it.
        response = await run_in_threadpool(
            _answer, bolt, Request(scope, receive), body, checked=checked
        )
        await response(scope, receive, send)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def readyz(request: Request) -> Response:
        is_ready = ready()
        body = {"ready": is_ready, **(status() if status is not None else {})}
        return JSONResponse(body, status_code=200 if is_ready else 503)

    async def unavailable(request: Request, error: Exception) -> Response:
        # A shared store (Redis, the channel store's database) that does not answer: the
        # client may retry; not our bug.
        logger.warning("%s %s: %s", request.method, request.url.path, error)
        return _text(503, "storage unavailable; retry")

    routes: list[BaseRoute] = [
        Route(path, _Raw(events), methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *extra_routes,
    ]
    return _EventsFirst(
        events,
        path,
        routes=routes,
        exception_handlers={StoreUnavailable: unavailable, DatabaseUnavailable: unavailable},
    )


class _Raw:
    """An ASGI endpoint for the router (a plain function would be taken for a request handler):
    the events path, when a root path sends it through the routes."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


class _EventsFirst(Starlette):
    """The app, with Slack's events path served before Starlette's middleware and router:
    every event would otherwise pass two exception middlewares, the route table and a
    request/response wrapper, which cost more than the signature check. ``events`` catches
    what it can answer; anything else reaches uvicorn (a 500, logged), as through Starlette's
    own error middleware."""

    def __init__(
        self, events: Callable[[Scope, Receive, Send], Awaitable[None]], path: str, **settings: Any
    ) -> None:
        super().__init__(**settings)
        self._events = events
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == self._path
            and not scope.get("root_path")
        ):
            scope["app"] = self
            await self._events(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def describe(app: Starlette) -> str:
    """The routes, for the start-up log line."""
    return json.dumps([getattr(r, "path", "?") for r in app.routes])
