"""The endpoint of an API model: the base URL its requests go to, and the normalised form of it
that is part of the model's cache identity.

Two servers behind one registry id are two models: answers cached from one are never reused for
the other. ``endpoint_identity`` is what ``OpenAIEngine`` (and the ``Embedder`` of an ``openai``
model) adds to every cache key. Spellings of one URL give one identity: scheme and host in lower
case, the scheme's default port dropped, repeated and trailing slashes dropped, user info and
fragment left out (the path and query are kept as written: servers may read them case-sensitively).
Local backends (llama.cpp, vLLM) have no endpoint; their keys do not change.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

from thinkbias.llm.types import ModelSpec

DEFAULT_API_BASE = "https://api.openai.com/v1"  # the openai client's default
DEFAULT_PORTS = {"http": 80, "https": 443}


def api_base_url(spec: ModelSpec) -> str:
    """The base URL requests of ``spec`` go to, resolved as the openai client resolves it:
    ``api_base``, else the environment's ``OPENAI_BASE_URL``, else the OpenAI API."""
    return spec.api_base.strip() or os.environ.get("OPENAI_BASE_URL", "").strip() or DEFAULT_API_BASE


def normalised_endpoint(url: str) -> str:
    """``url`` in one canonical spelling (see the module docstring); a URL without a scheme is
    taken as written, trimmed of trailing slashes."""
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        return url.strip().rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    path = re.sub(r"/{2,}", "/", parts.path).rstrip("/")
    return urlunsplit((scheme, netloc, path, parts.query, ""))


def endpoint_identity(spec: ModelSpec) -> str:
    """The cache-key part naming the endpoint of an API model: ``endpoint=<normalised base URL>``."""
    return f"endpoint={normalised_endpoint(api_base_url(spec))}"
