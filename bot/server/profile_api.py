"""``/api/profiles`` (GET list, POST create) and ``/api/profiles/{name}`` (GET, PUT to create or
replace, DELETE): agent profiles, kept by a ``ProfileStore``. Any known key may manage them:
they hold no channel data."""

from __future__ import annotations

import asyncio
import json

from chanctx.bot.server.api_access import NEED_KEY, ApiKeys, granted, refuse, validation_errors
from chanctx.bot.server.asgi import BODY_TIMEOUT
from chanctx.bot.server.bodies import BodyTooLarge, read_body
from chanctx.bot.stores.profiles import AgentProfile, ProfileFields, ProfileStore
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["profile_routes"]

_MAX_BODY = 64 * 1024


def profile_routes(profiles: ProfileStore, keys: ApiKeys | None) -> list[BaseRoute]:
    """``/api/profiles`` (GET list, POST create) and ``/api/profiles/{name}`` (GET, PUT to
    create or replace, DELETE). Any known key may manage profiles: they hold no channel data."""

    async def parsed(request: Request, name: str | None) -> AgentProfile | Response:
        """The profile in the body; for PUT its name comes from the path (``name``)."""
        if granted(keys, request.headers.get("authorization", "")) is None:
            return refuse(401, NEED_KEY)
        try:
            raw = await asyncio.wait_for(read_body(request, _MAX_BODY), timeout=BODY_TIMEOUT)
            data = json.loads(raw)
            if name is None:
                return AgentProfile.model_validate(data)
            if isinstance(data, dict) and "name" in data:
                # A GET, edit, PUT round trip repeats the name; naming another profile is a
                # mistake the client should hear about, not a rename.
                given = data.pop("name")
                if given != name:
                    return refuse(422, f"the body names profile {given!r} but the path {name!r}",
                                  fields=[{"field": "name", "problem": f"must be {name!r}"}])  # fmt: skip
            fields = ProfileFields.model_validate(data)
            return AgentProfile.model_validate({**fields.model_dump(), "name": name})
        except ValidationError as error:
            return refuse(422, "the profile is not valid", fields=validation_errors(error))
        except (BodyTooLarge, ValueError, TimeoutError, ClientDisconnect, UnicodeDecodeError):
            return refuse(422, "the body is not a JSON profile", fields=[{"field": "body",
                          "problem": "not JSON, too large or too slow"}])  # fmt: skip

    async def collection(request: Request) -> Response:
        if request.method == "GET":
            if granted(keys, request.headers.get("authorization", "")) is None:
                return refuse(401, NEED_KEY)
            return JSONResponse([p.model_dump() for p in profiles.all()])
        profile = await parsed(request, None)
        if isinstance(profile, Response):
            return profile
        if profiles.get(profile.name) is not None:
            return refuse(409, f"profile {profile.name!r} exists: PUT /api/profiles/{profile.name}")
        return await _stored(profiles, profile, created_status=201)

    async def one(request: Request) -> Response:
        name = str(request.path_params["name"])
        if request.method == "PUT":
            profile = await parsed(request, name)
            if isinstance(profile, Response):
                return profile
            return await _stored(profiles, profile, created_status=201)
        if granted(keys, request.headers.get("authorization", "")) is None:
            return refuse(401, NEED_KEY)
        if request.method == "DELETE":
            removed = await run_in_threadpool(profiles.delete, name)
            return Response(status_code=204) if removed else refuse(404, f"no profile {name!r}")
        found = profiles.get(name)
        return JSONResponse(found.model_dump()) if found else refuse(404, f"no profile {name!r}")

    return [
        Route("/api/profiles", collection, methods=["GET", "POST"]),
        Route("/api/profiles/{name}", one, methods=["GET", "PUT", "DELETE"]),
    ]


async def _stored(
    profiles: ProfileStore, profile: AgentProfile, *, created_status: int
) -> Response:
    try:
        replaced = await run_in_threadpool(profiles.put, profile)
    except ValueError as error:
        return refuse(409, str(error))
    return JSONResponse(profile.model_dump(), status_code=200 if replaced else created_status)
