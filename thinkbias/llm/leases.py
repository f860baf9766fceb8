"""Who is generating a request right now: the holder of a lease in the request cache.

A process about to generate requests leases their cache keys (``RequestCache.claim``); another
process that wants the same keys waits for the holder's results instead of paying for them twice
(Snakemake killed, its jobs still running, a rerun after ``--unlock``). A lease names its holder by
host, pid, process start time and a per-cache token. It expires when

- the holder ran on this host and its process is gone (pid absent, or reused by a process that
  started at another time), or it is this very process and the cache that leased it is closed;
- or the holder has not renewed it for ``lease_ttl_s()`` seconds (a holder renews its leases every
  ``ttl / 5`` s from a background thread; the only test for holders on other hosts).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

DEFAULT_LEASE_TTL_S = 300.0
POLL_S = 0.5  # how often a waiting process looks for the holder's results

_live_tokens: set[str] = set()
_live_lock = threading.Lock()


def lease_ttl_s() -> float:
    """Seconds after its last renewal that a lease expires (``THINKBIAS_CACHE_LEASE_S``, default 300)."""
    raw = os.environ.get("THINKBIAS_CACHE_LEASE_S", "")
    try:
        value = float(raw) if raw else DEFAULT_LEASE_TTL_S
    except ValueError:
        raise ValueError(f"THINKBIAS_CACHE_LEASE_S={raw!r} must be a number of seconds") from None
    if value <= 0:
        raise ValueError(f"THINKBIAS_CACHE_LEASE_S={raw!r} must be positive")
    return value


def process_start(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc``; "" elsewhere
    or when the process is gone): tells a pid apart from a later process that reused it."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22; the name in parentheses may hold spaces


def pid_running(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Holder:
    """The process (and cache connection, ``token``) holding a lease."""

    host: str
    pid: int
    started: str
    token: str

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}"


def new_holder() -> Holder:
    """A holder identity for a new cache connection of this process (registered as live)."""
    pid = os.getpid()
    holder = Holder(socket.gethostname(), pid, process_start(pid), uuid.uuid4().hex)
    with _live_lock:
        _live_tokens.add(holder.token)
    return holder


def retire(holder: Holder) -> None:
    """Mark ``holder``'s connection closed: leases it left behind expire at once."""
    with _live_lock:
        _live_tokens.discard(holder.token)


def holder_gone(holder: Holder) -> bool:
    """True when ``holder`` is known to be dead: its process on this host is gone (or is another
    process under the same pid), or it is this process and its cache connection is closed.
    Holders on other hosts are never known dead (only their renewals tell)."""
    if holder.host != socket.gethostname():
        return False
    if holder.pid == os.getpid():
        with _live_lock:
            return holder.token not in _live_tokens
    if not pid_running(holder.pid):
        return True
    now_started = process_start(holder.pid)
    return bool(holder.started and now_started and now_started != holder.started)


def lease_expired(holder: Holder, renewed: float, ttl_s: float, now: float | None = None) -> bool:
    """Whether a lease of ``holder`` last renewed at ``renewed`` (epoch seconds) may be taken over."""
    now = time.time() if now is None else now
    return holder_gone(holder) or now - renewed > ttl_s
