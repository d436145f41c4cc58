"""Framing shared by the parent and the worker: 4-byte big-endian length, 1-byte kind, payload.

Kinds: ``J`` a JSON object (control messages), ``D`` raw UTF-8 (the document, sent once).
The parent treats everything the worker sends as untrusted: frames have a size cap and a
malformed frame ends the worker.
"""

from __future__ import annotations

import json
import struct
from typing import Any

HEADER = struct.Struct(">IB")
KIND_JSON = ord("J")
KIND_DOC = ord("D")
# Largest frame the parent accepts from a worker (an llm() text may be the whole document).
MAX_WORKER_FRAME = 32 * 1024 * 1024


def encode_json(message: dict[str, Any]) -> bytes:
    payload = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return HEADER.pack(len(payload), KIND_JSON) + payload


def encode_doc(document: str) -> tuple[bytes, bytes]:
    """Header and payload, kept apart so a large document is not copied once more to join them."""
    payload = document.encode("utf-8", "surrogatepass")
    return HEADER.pack(len(payload), KIND_DOC), payload
