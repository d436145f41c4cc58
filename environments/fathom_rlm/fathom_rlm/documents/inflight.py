"""`get_document` for async callers: off the event loop, and built once per concurrent burst.

The rollouts of one group share a seed and usually start together; the `get_document` cache
helps only once a document exists, so without this each of them would build the same ~1 MB
document at the same time. Concurrent callers on one event loop await one build instead.
"""

from __future__ import annotations

import asyncio

from .document import Document, get_document

_BUILDING: dict[tuple[int, int], asyncio.Future[Document]] = {}
"""Builds in progress by (seed, doc_tokens); each entry removes itself when its build ends."""


async def aget_document(seed: int, doc_tokens: int = 200_000) -> Document:
    """`get_document(seed, doc_tokens)` in a worker thread, shared by concurrent callers."""
    key = (seed, doc_tokens)
    building = _BUILDING.get(key)
    if building is None or building.get_loop() is not asyncio.get_running_loop():
        building = asyncio.ensure_future(asyncio.to_thread(get_document, seed, doc_tokens))
        _BUILDING[key] = building

        def forget(done: asyncio.Future[Document]) -> None:
            if _BUILDING.get(key) is done:
                del _BUILDING[key]

        building.add_done_callback(forget)
    # Shielded: one caller being cancelled does not cancel the build the others await.
    return await asyncio.shield(building)
