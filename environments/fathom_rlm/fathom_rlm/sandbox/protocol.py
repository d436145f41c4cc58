"""Framing shared by the parent and the worker: 4-byte big-endian length, 1-byte kind, payload.

Kinds: ``J`` a JSON object (control messages), ``D`` raw UTF-8 (the document, sent once).
The parent treats everything the worker sends as untrusted: frames have a size cap, a frame
that is not a flat JSON object of the expected shape is a protocol violation, and every text
taken from a worker is made valid Unicode (no lone surrogates) before it goes anywhere.
"""

from __future__ import annotations

import codecs
import json
import struct
from typing import Any

HEADER = struct.Struct(">IB")
KIND_JSON = ord("J")
KIND_DOC = ord("D")
# Exit code of a worker whose own code (not the model's) ran out of memory.
EXIT_OUT_OF_MEMORY = 12
# Exit code of a worker that received something out of protocol from the parent.
EXIT_PROTOCOL = 3
# JSON writes one character as at most 6 bytes (\uXXXX); a frame also carries a few fields.
JSON_BYTES_PER_CHAR = 6
FRAME_OVERHEAD = 64 * 1024

_REPLACE_ERRORS = "fathom-sandbox-replace"


def _replace_with_fffd(error: UnicodeError) -> tuple[bytes, int]:
    # A lone surrogate cannot be UTF-8: it becomes U+FFFD, one per code point, so text made by
    # model code (a print, an exception message, an llm() prompt) always encodes. The UTF-8
    # encoder takes only ASCII str replacements, so the replacement is given as bytes.
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "\ufffd".encode() * (error.end - error.start), error.end


codecs.register_error(_REPLACE_ERRORS, _replace_with_fffd)


def encode_json(message: dict[str, Any]) -> bytes:
    payload = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    data = payload.encode("utf-8", _REPLACE_ERRORS)
    return HEADER.pack(len(data), KIND_JSON) + data


def encode_doc(document: str) -> tuple[bytes, bytes]:
    """Header and payload, kept apart so a large document is not copied once more to join them."""
    payload = document.encode("utf-8", "surrogatepass")
    return HEADER.pack(len(payload), KIND_DOC), payload


def frame_cap(max_chars: int) -> int:
    """Largest JSON frame that can carry a text of `max_chars` characters."""
    return max_chars * JSON_BYTES_PER_CHAR + FRAME_OVERHEAD


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (JSON escapes can carry them)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
