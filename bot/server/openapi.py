"""``GET /openapi.json``: the query API described from the models that validate it.

Request bodies are the pydantic models the routes validate with (``QueryBody``,
``AgentProfile``); answers have models here that exist to be described (the routes build plain
dicts). Every status a route can answer is listed, so a client (or schemathesis) can hold the
API to it.
"""

from __future__ import annotations

from typing import Any

from chanctx.bot.server.queries import QueryBody
from chanctx.bot.stores.profiles import NAME_PATTERN, AgentProfile, ProfileFields
from chanctx.tools import QueryChunk
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["openapi_document", "openapi_routes"]


class ContextResponse(BaseModel):
    chunks: list[QueryChunk]  # the dataclass the service fills, described as it is
    total_tokens: int
    token_budget: int
    truncated_count: int
    query: str
    format: str
    timed_out: bool
    rendered: str
    channel: str
    profile_fallback: bool


class ErrorModel(BaseModel):
    error: str
    fields: list[dict[str, str]] | None = None


class TurnsResponse(BaseModel):
    """The inspector's recent turns, newest first (each as ``inspector.turn_view`` builds it:
    budgets, cache share, blocks sent, Slack reads, tool calls, reply)."""

    turns: list[dict[str, Any]]


class PlaybookChannel(BaseModel):
    id: str
    name: str


class PlaybookBullet(BaseModel):
    id: str
    section: str
    content: str
    subject: str | None
    helpful: int
    harmful: int
    state: str
    superseded_by: str | None
    sources: list[dict[str, Any]]


class PlaybookResponse(BaseModel):
    """Without ``channel``: the channels with a playbook the key may read; with it, its
    bullets (superseded and quarantined ones included, with their state)."""

    channels: list[PlaybookChannel] | None = None
    channel: str | None = None
    bullets: list[PlaybookBullet] | None = None


_REF = "#/components/schemas/{model}"
# One Server-Sent Event: its name and its data (a JSON text: a chunk, the completion, or the
# partial answer on a timeout).
_SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["chunk", "complete", "timeout"]},
        "data": {"type": "string"},
    },
}


def _schemas() -> dict[str, Any]:
    found: dict[str, Any] = {}
    described = (QueryBody, AgentProfile, ProfileFields, ContextResponse, ErrorModel,
                 TurnsResponse, PlaybookResponse)  # fmt: skip
    for model in described:
        schema = model.model_json_schema(ref_template=_REF)
        found.update(schema.pop("$defs", {}))
        found[model.__name__] = schema
    return found


def _json(model: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF.format(model=model)}}}


def _errors(*statuses: int) -> dict[str, Any]:
    why = {
        400: "the body could not be read",
        401: "no API key, or an unknown one",
        403: "the key may not read that channel",
        404: "no such profile",
        409: "a profile of that name exists",
        413: "the body is too large",
        422: "the body or a parameter is not valid (the field is named)",
    }
    return {str(s): {"description": why[s], "content": _json("ErrorModel")} for s in statuses}


def openapi_document() -> dict[str, Any]:
    query_params = [
        {"name": name, "in": "query", "required": name in ("query", "channel"),
         "schema": QueryBody.model_json_schema()["properties"][name]}
        for name in ("query", "channel", "token_budget", "format", "profile", "timeout_ms")
    ] + [{"name": "type_filters", "in": "query", "required": False,
          "description": "repeated, or comma-separated",
          "schema": QueryBody.model_json_schema()["properties"]["type_filters"]["items"]}]  # fmt: skip
    name_param = {"name": "name", "in": "path", "required": True,
                  "schema": {"type": "string", "pattern": NAME_PATTERN}}  # fmt: skip
    profile_list = {"application/json": {"schema": {"type": "array",
                                                    "items": {"$ref": _REF.format(model="AgentProfile")}}}}  # fmt: skip
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "chanctx context query API",
            "version": "1",
            "description": (
                "Also a WebSocket at /api/context/ws (the key in the handshake's Authorization "
                'header): send {"type": "query", "id": ..., <QueryBody fields>}, receive '
                '{"type": "chunk", "id", "chunk"} messages, then {"type": "complete", "id", '
                "<StreamCompletion>} or {\"type\": \"timeout\", ...}; a refused query "
                'answers {"type": "error", "id", "status": 403 | 422}.'
            ),
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {"key": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"key": []}],
        "paths": {
            "/api/context/query": {"post": {
                "summary": "What a channel knows about a query, within a token budget",
                "requestBody": {"required": True, "content": _json("QueryBody")},
                "responses": {"200": {"description": "the ranked blocks",
                                      "content": _json("ContextResponse")},
                              **_errors(400, 401, 403, 413, 422)},
            }},
            "/api/context/stream": {"get": {
                "summary": "The same answer as Server-Sent Events (chunk..., complete)",
                "parameters": query_params,
                "responses": {"200": {"description": "an event stream",
                                      "content": {"text/event-stream": {"schema": _SSE_EVENT}}},
                              **_errors(401, 403, 422)},
            }},
            "/api/turns": {"get": {
                "summary": "The recent turns of the channels the key may read, newest first",
                "responses": {"200": {"description": "the turns", "content": _json("TurnsResponse")},
                              **_errors(401)},
            }},
            "/api/playbook": {"get": {
                "summary": "The channels with a playbook, or one channel's playbook",
                "parameters": [{"name": "channel", "in": "query", "required": False,
                                "schema": QueryBody.model_json_schema()["properties"]["channel"]}],
                "responses": {"200": {"description": "channels, or bullets",
                                      "content": _json("PlaybookResponse")},
                              **_errors(401, 403, 422)},
            }},
            "/api/profiles": {
                "get": {"summary": "Every agent profile",
                        "responses": {"200": {"description": "the profiles", "content": profile_list},
                                      **_errors(401)}},
                "post": {"summary": "Create a profile",
                         "requestBody": {"required": True, "content": _json("AgentProfile")},
                         "responses": {"201": {"description": "created", "content": _json("AgentProfile")},
                                       **_errors(401, 409, 422)}},
            },
            "/api/profiles/{name}": {
                "parameters": [name_param],
                "get": {"summary": "One profile",
                        "responses": {"200": {"description": "the profile", "content": _json("AgentProfile")},
                                      **_errors(401, 404)}},
                "put": {"summary": "Create or replace a profile (its name is the path's)",
                        "requestBody": {"required": True, "content": _json("ProfileFields")},
                        "responses": {"200": {"description": "replaced", "content": _json("AgentProfile")},
                                      "201": {"description": "created", "content": _json("AgentProfile")},
                                      **_errors(401, 409, 422)}},
                "delete": {"summary": "Delete a profile",
                           "responses": {"204": {"description": "deleted"}, **_errors(401, 404)}},
            },
        },
    }  # fmt: skip


def openapi_routes() -> list[BaseRoute]:
    document = openapi_document()

    async def serve(request: Request) -> Response:
        return JSONResponse(document)

    return [Route("/openapi.json", serve, methods=["GET"])]
