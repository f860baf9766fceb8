"""KV-cache arithmetic of a vLLM model on one GPU: how many tokens the cache holds, and how many
sequences may run at once so that vLLM never preempts (docs/models.md, vLLM memory)."""

from __future__ import annotations

GIB = 1024**3


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> int:
    """Bytes of K and V one token holds across all layers."""
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def kv_cache_tokens(kv_room_gib: float, bytes_per_token: int) -> int:
    """Tokens a KV cache of ``kv_room_gib`` holds."""
    return int(kv_room_gib * GIB // bytes_per_token)


def max_num_seqs_for(cache_tokens: int, longest_request: int) -> int:
    """Sequences that fit in the cache all at once when each runs to ``longest_request`` tokens
    (prompt + generation budget): vLLM's ``max_num_seqs`` without preemption (at least 1)."""
    if longest_request < 1:
        raise ValueError(f"longest_request must be positive, got {longest_request}")
    return max(1, cache_tokens // longest_request)
