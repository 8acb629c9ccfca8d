"""Several Slack workspaces behind one Web API URL, as Slack is: the bot token picks the team.

Each workspace is a whole ``FakeSlackAPI`` (its own channels, people, history and posts); this
server answers at one URL and hands each call to the workspace its token belongs to, so a bot
that used the wrong team's token, or a channel of the other team, is caught by the fakes
themselves. It also plays Slack's side of OAuth v2:

* ``GET /oauth/v2/authorize?client_id&scope&state&redirect_uri&team=T...``: the person picked
  workspace ``team`` and approved; a 302 back to ``redirect_uri`` (or the one given here) with a
  one-time ``code`` and the ``state``, or ``error=access_denied`` for a team not served here;
* ``POST /api/oauth.v2.access`` (client id and secret as HTTP Basic or form fields, ``code``):
  the team's bot token, bot user, scopes and team, once per code (``invalid_code`` after);
  ``invalid_client_id`` / ``bad_client_secret`` for wrong credentials.

``revoke(team)`` makes that team's token answer ``token_revoked`` from then on (uninstalled).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from chanctx.bot.replay._loopback import LoopbackServer
from chanctx.bot.replay.fake_slack import FakeSlackAPI

__all__ = ["FakeSlackWorkspaces"]


class FakeSlackWorkspaces(LoopbackServer):
    def __init__(
        self,
        workspaces: Mapping[str, Mapping[str, Any]],
        *,
        client_id: str = "1111.2222",
        client_secret: str = "fake-client-secret",
        redirect_uri: str | None = None,
        **fake_options: Any,
    ) -> None:
        """``workspaces``: team id -> that team's ``slack_api.json`` state (its ``auth`` gets
        the team id). ``fake_options`` go to every workspace's FakeSlackAPI (clock, ...)."""
        self.client_id = client_id
        self._secret = client_secret
        self.redirect_uri = redirect_uri
        self._lock = threading.Lock()
        self.teams: dict[str, FakeSlackAPI] = {}
        self._tokens: dict[str, str] = {}  # token -> team
        self._revoked: set[str] = set()
        self._codes: dict[str, str] = {}  # code -> team, until used
        for team, state in workspaces.items():
            seeded = dict(state)
            seeded["auth"] = {**dict(state.get("auth") or {}), "team_id": team}
            self.teams[team] = FakeSlackAPI(seeded, **fake_options)
            self._tokens[self.token_of(team)] = team
        self._listen(self._handler_class(), name="fake-slack-workspaces")
        self.root = f"{self.origin}/"
        self.url = f"{self.root}api/"
        self.authorize_url = f"{self.origin}/oauth/v2/authorize"

    @staticmethod
    def token_of(team: str) -> str:
        return f"xoxb-{team}-fake-not-a-secret"

    def revoke(self, team: str) -> None:
        with self._lock:
            self._revoked.add(self.token_of(team))

    def calls(self) -> dict[str, dict[str, int]]:
        """Each workspace's call counts (which team each call reached)."""
        return {team: fake.call_counts() for team, fake in self.teams.items()}

    def close(self) -> None:
        super().close()
        for fake in self.teams.values():
            fake.close()

    # --- serving -----------------------------------------------------------------------------

    def _authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        target = query.get("redirect_uri") or self.redirect_uri
        if query.get("client_id") != self.client_id or not target:
            return 400, {}, b"unknown client_id or no redirect_uri"
        team = query.get("team", "")
        if team not in self.teams:
            answer = {"error": "access_denied", "state": query.get("state", "")}
        else:
            code = secrets.token_hex(8)
            with self._lock:
                self._codes[code] = team
            answer = {"code": code, "state": query.get("state", "")}
        joiner = "&" if "?" in target else "?"
        return 302, {"Location": f"{target}{joiner}{urlencode(answer)}"}, b""

    def _access(self, headers: Mapping[str, str], params: dict[str, str]) -> dict[str, Any]:
        client_id, secret = params.get("client_id"), params.get("client_secret")
        basic = headers.get("authorization", "")
        if basic.startswith("Basic "):
            try:
                client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            except ValueError:
                return {"ok": False, "error": "invalid_client_id"}
        if client_id != self.client_id:
            return {"ok": False, "error": "invalid_client_id"}
        if secret != self._secret:
            return {"ok": False, "error": "bad_client_secret"}
        with self._lock:
            team = self._codes.pop(str(params.get("code")), None)
            if team is not None:
                self._revoked.discard(self.token_of(team))  # installing again
        if team is None:
            return {"ok": False, "error": "invalid_code"}
        auth = self.teams[team].identity()
        return {
            "ok": True,
            "app_id": "A0FAKEAPP1",
            "authed_user": {"id": "U0INSTALL1"},
            "scope": "app_mentions:read,chat:write",
            "token_type": "bot",
            "access_token": self.token_of(team),
            "bot_user_id": auth.get("user_id", ""),
            "team": {"id": team, "name": auth.get("team", team)},
            "enterprise": None,
            "is_enterprise_install": False,
        }

    def _route(self, verb: str, path: str, headers: Mapping[str, str], raw: bytes) -> Any:
        url = urlsplit(path)
        if url.path == "/oauth/v2/authorize" and verb == "GET":
            return self._authorize(dict(parse_qsl(url.query)))
        if url.path == "/api/oauth.v2.access":
            params = dict(parse_qsl(url.query))
            params.update(dict(parse_qsl(raw.decode("utf-8", "replace"))))
            return 200, {}, self._access(headers, params)
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        with self._lock:
            team = self._tokens.get(token)
            revoked = token in self._revoked
        if team is None or revoked:
            error = "token_revoked" if revoked else "invalid_auth"
            return 200, {}, {"ok": False, "error": error}
        reply = self.teams[team]._serve(verb, path, headers, raw)
        out_headers = {"Content-Type": reply.content_type, **reply.headers}
        return reply.status, out_headers, reply.body

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, out, body = fake._route(self.command, self.path, headers, raw)
                if not isinstance(body, bytes):
                    body = json.dumps(body).encode()
                    out = {"Content-Type": "application/json; charset=utf-8", **out}
                self.send_response(status, HTTPStatus(status).phrase)
                for name, value in out.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
