"""The one token estimate of fathom-rlm: 4 characters a token, wherever no tokenizer counts.

Documents are sized with it, prompts state lengths with it, and a rollout's token record falls
back to it when a server reports no usage. It imports nothing, so every part can use it.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def chars_to_tokens(chars: int) -> int:
    """Tokens in `chars` characters, rounded up (a 1-character message still costs a token)."""
    return -(-chars // CHARS_PER_TOKEN)
