"""Putting the guard around an openenv-core app and serving it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from .middleware import ServingGuard, describe_errors
from .quotas import ClientQuotas
from .settings import GuardSettings

SWITCH_INTERVAL_S = 0.0005


class RowResetArgs(BaseModel):
    """`reset` arguments of an environment that poses rows of a split, checked as they are
    (strict types, no unknown names) on HTTP and on `/ws` before any work."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seed: int | None = Field(None, ge=0, description="row = seed modulo the row count")
    episode_id: str | None = Field(None, max_length=255)
    task_index: int | None = Field(None, ge=0, description="the row to pose")


def guarded_env_app(
    make_env: Callable[[], Any],
    action_model: type[BaseModel],
    observation_model: type[BaseModel],
    *,
    env_name: str,
    settings: GuardSettings,
    close: Callable[[], None],
    quotas: ClientQuotas | None = None,
) -> ServingGuard:
    """openenv-core's app for one environment (`make_env` builds a session's), behind the
    guard, with `/healthz`; `close` (blocking, run off the event loop) releases what the
    server process holds when the app shuts down."""
    app = create_app(
        make_env,
        action_model,
        observation_model,
        env_name=env_name,
        # Idle sessions are closed by the guard (it counts only time spent waiting for the
        # client, not a slow model call), so openenv-core's own reaper stays off.
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=settings.max_sessions),
    )

    async def close_process_resources() -> None:
        await asyncio.to_thread(close)

    app.router.on_shutdown.append(close_process_resources)
    return guard_app(app, settings, RowResetArgs, action_model, quotas)


def guard_app(
    app: FastAPI,
    settings: GuardSettings,
    reset_model: type[BaseModel],
    action_model: type[BaseModel],
    quotas: ClientQuotas | None = None,
) -> ServingGuard:
    """`app` (openenv-core's `create_app`) behind the guard, with `/healthz` (open to all) and
    every error of its HTTP routes as one line of JSON. Pass the `quotas` the environment
    charges its endpoint use to, so sessions and endpoint use count against one ledger."""

    @app.get("/healthz", tags=["Health"])
    def healthz() -> dict[str, str]:  # openenv-core serves /health; probes often ask /healthz
        return {"status": "healthy"}

    add_error_handlers(app)
    return ServingGuard(app, settings, reset_model, action_model, quotas)


def add_error_handlers(app: FastAPI) -> None:
    """Errors as `{"error": ..., "code": ...}` on one line: a refused argument or a misuse of
    the protocol (ValueError, RuntimeError from the environment) is the client's (400), anything
    else the server's (500, its type only: internals stay in the server log)."""

    def reply(status: int, code: str, message: str) -> JSONResponse:
        return JSONResponse({"error": " ".join(message.split())[:500], "code": code}, status)

    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return reply(422, "VALIDATION_ERROR", describe_errors(exc.errors()))

    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail
        if isinstance(detail, list):  # openenv-core's 422: pydantic's error list
            detail = describe_errors(detail)
        return reply(exc.status_code, "HTTP_ERROR", str(detail))

    async def client_error(_: Request, exc: Exception) -> JSONResponse:
        return reply(400, "EXECUTION_ERROR", str(exc) or type(exc).__name__)

    async def server_error(_: Request, exc: Exception) -> JSONResponse:
        return reply(500, "INTERNAL_ERROR", f"internal error ({type(exc).__name__})")

    app.add_exception_handler(RequestValidationError, validation)
    # starlette's class, which FastAPI's subclasses: FastAPI raises both (its body parser raises
    # starlette's, and its default handler answered that one in its own shape).
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ValueError, client_error)
    app.add_exception_handler(RuntimeError, client_error)
    app.add_exception_handler(Exception, server_error)


def serve(app: Any, settings: GuardSettings, name: str) -> None:
    """Bind the address, print the start-up line, then serve `app` with uvicorn. An address that
    cannot be bound (a port in use) is one line on stderr and exit status 2, with no start-up
    line before it. Its WebSocket protocol is wsproto's, which takes a long message in steps as it
    arrives (no step of the event loop decodes it whole) and closes with 1009 as soon as it
    passes the message limit."""
    import dataclasses
    import socket
    import sys

    import uvicorn

    from .connections import guarded_protocol
    from .settings import fail_at_start

    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((settings.host, settings.port))
    except OSError as exc:
        listener.close()
        fail_at_start(f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}")
    # Port 0 asks for a free port: the line names the one bound.
    settings = dataclasses.replace(settings, port=listener.getsockname()[1])
    # Slow work (parsing and grading a long reply) runs on worker threads; the event loop
    # thread then waits for the interpreter lock up to one switch interval (5 ms by default)
    # each time it needs it, which adds up to tens of milliseconds per reply to other sessions.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    config = uvicorn.Config(
        app,
        log_level="warning",
        http=guarded_protocol(settings),  # header deadline and connection cap
        ws="wsproto",
        ws_max_size=settings.max_message_bytes + 4096,  # room for the JSON envelope
        # uvicorn believes X-Forwarded-For from 127.0.0.1 by default: any local client could
        # then name its own address. Only the configured proxies are believed.
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies) or None,
    )
    print(settings.describe(name), flush=True)
    uvicorn.Server(config).run(sockets=[listener])


__all__ = ["RowResetArgs", "add_error_handlers", "describe_errors", "guard_app", "serve"]
