"""Who may do what: the `authorize` hook, asked before every request is served, and the
principal it names, which scopes every id a durable server keeps.

The hook says who the caller is (`authorize(headers, action, thread_id, run_id)` returns a
principal's id, a string) or refuses (None or False). agui does the bookkeeping: with a store,
each thread and run lives in the namespace of the principal that started it, so another
principal's request for the same id finds nothing, exactly as for an id never used. What one
principal started is never readable or stoppable by another, and an id's existence is not an
oracle, whatever the hook forgets to check; the hook writes a policy (who may use the agent at
all, which actions a role has), not an ownership table.

`True` is accepted for the hooks written before principals (allowed, with no principal): those
requests share one anonymous namespace of their own, apart from every named principal's.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Literal, TypeAlias

import attrs

__all__ = ["ACTIONS", "Action", "Authorize", "Principal", "Refused", "ask", "request_headers"]

log = logging.getLogger("agui.server")

Action: TypeAlias = Literal[
    "start", "resume", "connect", "stop", "capabilities", "console", "list", "delete", "metrics"
]
ACTIONS: tuple[Action, ...] = (
    "start",
    "resume",
    "connect",
    "stop",
    "capabilities",
    "console",
    "list",
    "delete",
    "metrics",
)
Authorize: TypeAlias = Callable[
    [Mapping[str, str], Action, "str | None", "str | None"], Awaitable["str | bool | None"]
]
"""`authorize(headers, action, thread_id, run_id) -> principal`: headers with lower-case names
(repeated ones joined with ", "); thread_id and run_id as the request names them (None where it
names none: resume and stop name the run only, connect the thread only, capabilities, console
and metrics nothing). With a store, the thread API (agui.http.threads) asks "list" for
`GET {path}/threads` (naming nothing), "connect" for `GET {path}/threads/{id}` (it reads what
connect reads) and "delete" for `DELETE {path}/threads/{id}` (naming the thread). Return the
caller's principal (a non-empty string: a user id, a tenant, a key's id) to allow, None or False
to refuse (403); True allows with no principal (an anonymous namespace)."""


class Refused(Exception):
    """The hook refused (403) or failed (500); answered with `status` and a JSON error. An
    internal signal, answered by the server: no AguiError, which is what callers catch."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


@attrs.frozen
class Principal:
    """Who a request is for, and the namespace of the ids it names. `name` is what the hook
    returned (None: no hook, or True); `prefix` is put before each id the store keeps ("" with no
    hook: the ids as they are, as before hooks named principals)."""

    name: str | None
    prefix: str

    def key(self, ident: str) -> str:
        """The id as the store keeps it."""
        return self.prefix + ident

    def wire(self, key: str) -> str:
        """The id as the client named it, from the store's key."""
        return key[len(self.prefix) :] if key.startswith(self.prefix) else key

    def owns(self, key: str) -> bool:
        return key.startswith(self.prefix)


NOBODY = Principal(None, "")
"""No hook: ids as they are, one namespace for every caller."""
ANONYMOUS = Principal(None, "-/")
"""A hook that answered True: a namespace of its own, apart from every named principal's (its
prefix cannot be a principal's: theirs are hex digests)."""


def _named(name: str) -> Principal:
    # A digest, not the name: the store holds no user ids, and no principal's prefix can be
    # written as another's (or as the anonymous one) by choosing an id.
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    return Principal(name, f"{digest}/")


def request_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """An ASGI scope's headers as the hook gets them: lower-case names, repeated ones joined."""
    headers: dict[str, str] = {}
    for key, value in raw:
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    return headers


async def ask(
    authorize: Authorize | None,
    raw_headers: Iterable[tuple[bytes, bytes]],
    action: Action,
    thread_id: str | None,
    run_id: str | None,
) -> Principal:
    """The principal of a request, or Refused: 403 when the hook says no, 500 (logged) when it
    raises or answers something that is not a principal."""
    if authorize is None:
        return NOBODY
    try:
        answer = await authorize(request_headers(raw_headers), action, thread_id, run_id)
    except Exception:
        log.exception("authorize failed on %s (thread %r, run %r)", action, thread_id, run_id)
        raise Refused(500, "the authorization check failed") from None
    if answer is True:
        return ANONYMOUS
    if answer is None or answer is False:
        raise Refused(403, f"not allowed to {action} here")
    if isinstance(answer, str) and answer:
        return _named(answer)
    log.error(
        "authorize answered %r on %s: a principal is a non-empty string (or None/False to "
        "refuse, True to allow with no principal)",
        type(answer).__name__,
        action,
    )
    raise Refused(500, "the authorization check failed")
