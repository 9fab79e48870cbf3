"""`redis://HOST:PORT/DB`: the event log in Redis, for many workers on many machines
(`pip install 'agui-spec[redis]'`: redis-py's asyncio client, with hiredis).

One Redis Stream per run. An entry carries a batch of events (an append is one entry): from
Python, one entry per event cannot reach 100k events/s, a batch per entry can. The cursor of an
event is its entry's id and its index in the entry, `<ms>-<seq>.<index>`. Every write that must
be atomic is one Lua script (one round trip): starting a run (the thread's busy check and the
creation), appending (the run must be running; the entry, the record's last cursor, retention,
and on the terminal event the run's end), closing a lost run (exactly one closer), renewing a
lease, requesting a stop. A follower reads the stream with XRANGE, then waits with XREAD BLOCK.

Keys, under a prefix (`agui:` unless the URL says `?prefix=`):

* `run:{run_id}`: a hash, the run's record (`thread`, `status`, `owner`, `started`, `lease`,
  `stop`, `last`, `kept`: events kept, `finished`), its RunAgentInput (`input`), and the token of
  the last write (`token`) with the entry it added (`entry`);
* `events:{run_id}`: the stream; an entry's fields are `c` (how many events), `d` (the events
  concatenated), `l` (their lengths, comma-separated, when more than one) and `t` (present on the
  entry that ends with the terminal event);
* `thread:{thread_id}`: a sorted set of the thread's run ids, scored by `seq`, a counter shared
  by every worker, so the order is the order the runs started in;
* `running:{thread_id}`: a set of the thread's running runs (the busy check);
* `leases`: a sorted set of the running runs by the end of their lease (`expired()`);
* `threads:{namespace}`: a sorted set of a namespace's threads, scored by the `seq` of their
  latest run (`list_threads` reads a page of it; the ids of threads whose keys expired are
  dropped from it as a listing meets them);
* `used:{namespace}` (the bytes its runs hold), `sizes:{namespace}` (a hash, each run's bytes)
  and `expiring:{namespace}` (a sorted set of its finished runs, `r{run_id}`, and idle threads,
  `t{thread_id}`, by when their keys expire, in ms): `usage`, kept by the scripts that write;
  what expired leaves it when it is next read. A run's hash names its namespace (`ns`); runs
  written before (without it) are not counted.

The first entry of a run's stream holds its RUN_STARTED without its copy of the input (the APPEND
script cuts it out: agui.store.base.elide_input's form), made whole when read.

`delete_thread` is one script: every key of the thread's runs (UNLINK: Redis frees a long
stream in the background), their leases, the thread's index and running set, its entry in its
namespace's index.

Retention: a run's stream is trimmed by whole entries, oldest first, while the events left are at
least `max_events_per_run` (so it keeps up to one batch more); a finished run's keys expire
`run_ttl_seconds` after the run finished (PEXPIRE), and so does its thread's index once no run of
the thread runs; `max_runs_per_thread` is applied when a run starts. Scripts touch keys they
build from the prefix, so a Redis Cluster is not supported (a primary with replicas is).

Timeouts: every timeout agui depends on is set here, never left to redis-py's defaults (they
changed: 5.x-7.x had no socket timeout, 8.x has 5 s, the length of the XREAD BLOCK agui used, so
a run silent for 5 s cut every stream following it). A command's reply must come within
`socket_timeout`; a follower's blocked XREAD waits `block` seconds, on connections of its own
whose socket timeout is `block + socket_timeout`, so the read is never cut by the client and a
dead server is still noticed. A dropped connection or a timeout is retried with backoff; the
writes that are not idempotent by themselves (starting a run, appending, closing a lost run)
carry a token, and a retry of a write that was stored answers what the first one did, so a
lost reply never stores events twice.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import secrets
import socket
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
    RedisError,
    TimeoutError as RedisTimeoutError,
)

from .base import (
    ELIDED,
    Cursor,
    EventBatch,
    EventLog,
    Retention,
    RunExists,
    RunRecord,
    StoreError,
    ThreadBusy,
    ThreadSummary,
    UnknownRun,
    Usage,
    restore_input,
)

__all__ = ["RedisLog"]

CHUNK = 500
"""Stream entries read per XRANGE / XREAD."""

FIRST_CHUNK = 4
"""Stream entries read by a read's first XRANGE: an entry holds a whole append (up to a
thousand events), and a reader resuming a long run wants its first events before the rest."""

BATCH = 4096
"""The most events `read_batches` gives in one batch when the caller sets no limit."""

# ── timeouts (RedisLog's parameters; the URL's query options of the same name) ─────────────

CONNECT_TIMEOUT = 5.0
"""Seconds to open a connection (TCP, and TLS for rediss://): `connect_timeout`, or the URL's
`socket_connect_timeout`."""

SOCKET_TIMEOUT = 10.0
"""Seconds a command's whole reply may take (an append of a big batch, an XRANGE of 500 entries
included): `socket_timeout`, or the URL's `socket_timeout`. Longer means Redis is gone or stuck."""

BLOCK_MS = 5000
"""How long one XREAD BLOCK waits before the follower checks that its run still exists, in
milliseconds: the default of `block` (seconds), read when a RedisLog is made. The followers'
connections time out after `block + socket_timeout`, never during the wait."""

HEALTH_CHECK_INTERVAL = 30.0
"""A connection idle for longer is PINGed before its next command, and replaced if the PING
fails (a connection a proxy or a firewall dropped): `health_check_interval`, or the URL's; 0:
never. Longer than `block`, so a follower's XREADs go without."""

KEEPALIVE = 30.0
"""Seconds a connection is idle before the kernel's first TCP keep-alive probe (then one every
KEEPALIVE_INTERVAL, KEEPALIVE_PROBES unanswered drop it): `keepalive`; 0, or the URL's
`socket_keepalive=false`: no keep-alive."""

KEEPALIVE_INTERVAL = 5
KEEPALIVE_PROBES = 3

RETRIES = 3
"""Retries of a command whose connection dropped or timed out (the connection is replaced), after
EqualJitterBackoff(base=BACKOFF_BASE, cap=BACKOFF_CAP): 0.25-0.5 s, 0.5-1 s, 1-2 s: `retries`."""

BACKOFF_BASE = 0.25
BACKOFF_CAP = 2.0

URL_OPTIONS = {
    "socket_connect_timeout": "connect_timeout",
    "socket_timeout": "socket_timeout",
    "health_check_interval": "health_check_interval",
    "socket_keepalive": "keepalive",
}
"""The query options of a Redis URL (redis-py's names) that RedisLog reads itself: each sets the
RedisLog parameter named here when that parameter is not given."""

COMMAND_CONNECTIONS = 64
"""Connections for commands (appends, reads, records) per instance."""

TAIL_CONNECTIONS = 100_000
"""Connections for followers blocked in XREAD per instance: one per follower waiting."""

RECORD_FIELDS = ("thread", "status", "owner", "started", "lease", "stop", "last", "finished")

_USAGE = """
-- A namespace's usage: `used:{ns}` its bytes, `sizes:{ns}` each run's, `expiring:{ns}` the runs
-- ('r' .. id) and threads ('t' .. id) whose keys expire, by when (ms).
local function add_usage(prefix, ns, run_id, change)
    if ns and change ~= 0 then
        redis.call('HINCRBY', prefix .. 'sizes:' .. ns, run_id, change)
        redis.call('INCRBY', prefix .. 'used:' .. ns, change)
    end
end
local function forget(prefix, ns, run_id)
    if not ns then return end
    local sizes = prefix .. 'sizes:' .. ns
    local size = redis.call('HGET', sizes, run_id)
    if size then
        -- a namespace that holds nothing leaves no key (nor its name)
        if redis.call('DECRBY', prefix .. 'used:' .. ns, size) <= 0 then
            redis.call('DEL', prefix .. 'used:' .. ns)
        end
        redis.call('HDEL', sizes, run_id)
    end
    redis.call('ZREM', prefix .. 'expiring:' .. ns, 'r' .. run_id)
end
"""

_FINISH = (
    _USAGE
    + """
local function finish(run_key, run_id, thread, now, ttl_ms, prefix)
    redis.call('HSET', run_key, 'status', 'finished', 'finished', now)
    redis.call('ZREM', prefix .. 'leases', run_id)
    local running = prefix .. 'running:' .. thread
    redis.call('SREM', running, run_id)
    if ttl_ms > 0 then
        redis.call('PEXPIRE', run_key, ttl_ms)
        redis.call('PEXPIRE', prefix .. 'events:' .. run_id, ttl_ms)
        local ns = redis.call('HGET', run_key, 'ns')
        local expiring = ns and prefix .. 'expiring:' .. ns
        local at = math.floor(tonumber(now) * 1000) + ttl_ms
        if ns then redis.call('ZADD', expiring, at, 'r' .. run_id) end
        if redis.call('SCARD', running) == 0 then
            redis.call('PEXPIRE', prefix .. 'thread:' .. thread, ttl_ms)
            if ns then redis.call('ZADD', expiring, at, 't' .. thread) end
        end
    end
end
"""
)

START = (
    _USAGE
    + """
-- KEYS: run, thread, running, leases, seq, threads (the namespace's index)
-- ARGV: run_id, thread_id, owner, started, lease, stop, input, exclusive, max_runs, prefix, token,
-- namespace
if redis.call('EXISTS', KEYS[1]) == 1 then
    -- the same token: a retry of this very start, whose reply was lost
    if redis.call('HGET', KEYS[1], 'token') == ARGV[11] then return 'ok' end
    return 'exists'
end
if ARGV[8] == '1' then
    for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
        if redis.call('HGET', ARGV[10] .. 'run:' .. id, 'status') == 'running' then
            return 'busy:' .. id
        end
        redis.call('SREM', KEYS[3], id)
    end
end
redis.call('HSET', KEYS[1], 'thread', ARGV[2], 'status', 'running', 'owner', ARGV[3],
    'started', ARGV[4], 'lease', ARGV[5], 'stop', ARGV[6], 'last', '', 'kept', 0,
    'input', ARGV[7], 'token', ARGV[11], 'ns', ARGV[12])
add_usage(ARGV[10], ARGV[12], ARGV[1], #ARGV[7])
redis.call('ZREM', ARGV[10] .. 'expiring:' .. ARGV[12], 't' .. ARGV[2])
local seq = redis.call('INCR', KEYS[5])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('ZADD', KEYS[6], seq, ARGV[2])
redis.call('PERSIST', KEYS[2])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
local max_runs = tonumber(ARGV[9])
if max_runs > 0 then
    local count = redis.call('ZCARD', KEYS[2])
    if count > max_runs then
        for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, count - max_runs - 1)) do
            local key = ARGV[10] .. 'run:' .. id
            local old = redis.call('HMGET', key, 'status', 'ns')
            if old[1] ~= 'running' then
                forget(ARGV[10], old[2], id)
                redis.call('DEL', key, ARGV[10] .. 'events:' .. id)
                redis.call('ZREM', KEYS[2], id)
            end
        end
    end
end
return 'ok'
"""
)

APPEND = (
    _FINISH
    + """
-- KEYS: run, events
-- ARGV: run_id, count, lengths, data, final, max_events, ttl_ms, prefix, now, token
local record = redis.call('HMGET', KEYS[1], 'status', 'thread', 'kept', 'token', 'entry', 'last',
    'ns')
if not record[1] then return 'unknown' end
-- the same token: a retry of this very append, whose reply was lost; it was stored
if record[4] == ARGV[10] then return record[5] end
if record[1] ~= 'running' then return 'finished' end
local count = tonumber(ARGV[2])
local data, lengths = ARGV[4], ARGV[3]
if record[6] == '' and record[7] then
    -- the run's first event, RUN_STARTED, carries the input the record holds: keep one copy
    -- (agui.store.base.elide_input's form: NUL, the input's offset, ':', the rest)
    local input = redis.call('HGET', KEYS[1], 'input')
    local first = #data
    if count > 1 then first = tonumber(string.match(lengths, '^%d+')) end
    local at = nil
    if #input > 0 then at = string.find(string.sub(data, 1, first), input, 1, true) end
    if at then
        local head = '\0' .. string.format('%d', at - 1) .. ':'
        data = head .. string.sub(data, 1, at - 1) .. string.sub(data, at + #input)
        if count > 1 then
            local rest = string.sub(lengths, #string.match(lengths, '^%d+') + 1)
            lengths = string.format('%d', first - #input + #head) .. rest
        end
    end
end
local id
if count == 1 then
    if ARGV[5] == '1' then
        id = redis.call('XADD', KEYS[2], '*', 'c', 1, 'd', data, 't', 1)
    else
        id = redis.call('XADD', KEYS[2], '*', 'c', 1, 'd', data)
    end
elseif ARGV[5] == '1' then
    id = redis.call('XADD', KEYS[2], '*', 'c', count, 'd', data, 'l', lengths, 't', 1)
else
    id = redis.call('XADD', KEYS[2], '*', 'c', count, 'd', data, 'l', lengths)
end
local added = #data
local kept = tonumber(record[3]) + count
local max_events = tonumber(ARGV[6])
if max_events > 0 and kept > max_events then
    local keep_from = nil
    local dropped = 0
    for _, entry in ipairs(redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 64)) do
        local size = tonumber(entry[2][2])
        if entry[1] == id or kept - size < max_events then
            keep_from = entry[1]
            break
        end
        kept = kept - size
        dropped = dropped + #entry[2][4]
    end
    if keep_from == nil then
        keep_from = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1][1]
        dropped = 0
    end
    added = added - dropped
    redis.call('XTRIM', KEYS[2], 'MINID', keep_from)
    redis.call('HSET', KEYS[1], 'trimmed', 1)
end
redis.call('HSET', KEYS[1], 'kept', kept, 'last', id .. '.' .. (count - 1), 'token', ARGV[10],
    'entry', id)
add_usage(ARGV[8], record[7], ARGV[1], added)
if ARGV[5] == '1' then
    finish(KEYS[1], ARGV[1], record[2], ARGV[9], tonumber(ARGV[7]), ARGV[8])
end
return id
"""
)

CLOSE_LOST = (
    _FINISH
    + """
-- KEYS: run, events
-- ARGV: run_id, event, now, ttl_ms, prefix, token
local record = redis.call('HMGET', KEYS[1], 'status', 'thread', 'lease', 'kept', 'token', 'ns')
if record[5] == ARGV[6] then return 1 end  -- a retry of this very call: it closed the run
if record[1] ~= 'running' or tonumber(record[3]) >= tonumber(ARGV[3]) then return 0 end
local id = redis.call('XADD', KEYS[2], '*', 'c', 1, 'd', ARGV[2], 't', 1)
add_usage(ARGV[5], record[6], ARGV[1], #ARGV[2])
redis.call('HSET', KEYS[1], 'kept', tonumber(record[4]) + 1, 'last', id .. '.0', 'token', ARGV[6],
    'entry', id)
finish(KEYS[1], ARGV[1], record[2], ARGV[3], tonumber(ARGV[4]), ARGV[5])
return 1
"""
)

LIST_THREADS = """
-- KEYS: threads (the namespace's index); ARGV: prefix, max score ('+inf' or '(N'), count
-- Returns, newest first, per thread: id, order, runs, the latest run's id and record fields
-- (RECORD_FIELDS, then 'finished'), and its last stream entry's 'd' and 'l' (or false).
local found = {}
local top = ARGV[2]
local want = tonumber(ARGV[3])
while #found < want do
    local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], top, '-inf', 'WITHSCORES', 'LIMIT', 0,
        want - #found)
    if #page == 0 then break end
    for i = 1, #page, 2 do
        local thread = page[i]
        top = '(' .. page[i + 1]
        local index = ARGV[1] .. 'thread:' .. thread
        local latest = nil
        local fields = nil
        for _, id in ipairs(redis.call('ZREVRANGE', index, 0, -1)) do
            fields = redis.call('HMGET', ARGV[1] .. 'run:' .. id, 'thread', 'status', 'owner',
                'started', 'lease', 'stop', 'last', 'finished')
            if fields[2] then latest = id break end
            redis.call('ZREM', index, id)  -- expired
        end
        if latest == nil then
            redis.call('ZREM', KEYS[1], thread)  -- every run expired: the thread is gone
        else
            local entry = redis.call('XREVRANGE', ARGV[1] .. 'events:' .. latest, '+', '-',
                'COUNT', 1)[1]
            local data, lengths = false, false
            if entry then
                for j = 1, #entry[2], 2 do
                    if entry[2][j] == 'd' then data = entry[2][j + 1] end
                    if entry[2][j] == 'l' then lengths = entry[2][j + 1] end
                end
            end
            table.insert(found, {thread, page[i + 1], redis.call('ZCARD', index), latest,
                fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7],
                fields[8], data, lengths})
        end
    end
end
return found
"""

DELETE_THREAD = (
    _USAGE
    + """
-- KEYS: thread, running, threads (the namespace's index), leases
-- ARGV: prefix, thread_id, namespace
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do table.insert(ids, id) end
for _, id in ipairs(ids) do
    forget(ARGV[1], ARGV[3], id)
    redis.call('UNLINK', ARGV[1] .. 'run:' .. id, ARGV[1] .. 'events:' .. id)
    redis.call('ZREM', KEYS[4], id)
end
redis.call('UNLINK', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', ARGV[1] .. 'expiring:' .. ARGV[3], 't' .. ARGV[2])
return ids
"""
)

USAGE = (
    _USAGE
    + """
-- KEYS: used, expiring, threads (the namespace's); ARGV: prefix, namespace, now (ms)
-- What expired since the last look leaves the usage first: the runs and threads whose keys
-- Redis dropped (at most 1000 a call; a key not yet expired is looked at again next time).
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[3], 'LIMIT', 0, 1000)) do
    local id = string.sub(member, 2)
    if string.sub(member, 1, 1) == 'r' then
        if redis.call('EXISTS', ARGV[1] .. 'run:' .. id) == 0 then forget(ARGV[1], ARGV[2], id) end
    elseif redis.call('EXISTS', ARGV[1] .. 'thread:' .. id) == 0 then
        redis.call('ZREM', KEYS[3], id)
        redis.call('ZREM', KEYS[2], member)
    end
end
return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('ZCARD', KEYS[3])}
"""
)

RENEW = """
-- KEYS: run, leases; ARGV: run_id, owner, lease
local record = redis.call('HMGET', KEYS[1], 'status', 'owner')
if record[1] ~= 'running' or record[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'lease', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
"""

STOP = """
-- KEYS: run; returns the record as it was (RECORD_FIELDS), or nothing for an unknown run
local record = redis.call('HMGET', KEYS[1], 'thread', 'status', 'owner', 'started', 'lease',
    'stop', 'last', 'finished')
if not record[2] then return nil end
if record[2] == 'running' then redis.call('HSET', KEYS[1], 'stop', 1) end
return record
"""


def parse_cursor(cursor: Cursor) -> tuple[int, int, int]:
    """(ms, seq, index) of a cursor `<ms>-<seq>.<index>`; StoreError for anything else."""
    entry, dot, index = cursor.partition(".")
    ms, dash, seq = entry.partition("-")
    if not (dot and dash) or len(cursor) > 64:
        raise StoreError(f"not a cursor of this log: {cursor!r}")
    for part in (ms, seq, index):
        if not (part.isascii() and part.isdigit()) or (part[0] == "0" and part != "0"):
            raise StoreError(f"not a cursor of this log: {cursor!r}")
    return int(ms), int(seq), int(index)


def entry_key(entry_id: bytes | str) -> tuple[int, int]:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    return int(ms), int(seq)


def split(fields: dict[bytes, bytes]) -> list[bytes]:
    """The events an entry carries."""
    data = fields[b"d"]
    lengths = fields.get(b"l")
    if lengths is None:
        return [data]
    events = []
    start = 0
    for length in lengths.split(b","):
        end = start + int(length)
        events.append(data[start:end])
        start = end
    return events


def to_record(run_id: str, values: Sequence[bytes | None]) -> RunRecord | None:
    """A RunRecord from the RECORD_FIELDS of a run's hash (None when the hash is gone)."""
    thread, status, owner, started, lease, stop, last, finished = values
    if status is None or thread is None or owner is None:
        return None
    return RunRecord(
        thread_id=thread.decode(),
        run_id=run_id,
        status="finished" if status == b"finished" else "running",
        owner=owner.decode(),
        started_at=float(started or 0),
        lease_until=float(lease or 0),
        stop_requested=stop == b"1",
        last_cursor=last.decode() if last else None,
        finished_at=float(finished) if finished and status == b"finished" else None,
    )


def _seconds(name: str, value: Any, *, zero: bool = False) -> float:
    """A number of seconds, positive (or zero when `zero`) and finite; StoreError otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise StoreError(
            f"Redis store: {name} must be a number of seconds, not {value!r}"
        ) from None
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        least = "zero or more" if zero else "more than zero"
        raise StoreError(f"Redis store: {name} must be {least} seconds, not {value!r}")
    return number


def _settings(url: str, given: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The URL without the query options RedisLog reads itself (URL_OPTIONS), and the settings:
    each parameter `given` (not None), else its URL option, else the default."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    from_url: dict[str, Any] = {}
    for option, value in query:
        if option in URL_OPTIONS:
            from_url[URL_OPTIONS[option]] = value
    if from_url.get("keepalive") is not None:  # socket_keepalive=false: off; true: the default
        off = from_url["keepalive"].upper() in ("0", "F", "FALSE", "N", "NO")
        from_url["keepalive"] = 0.0 if off else KEEPALIVE
    defaults = {
        "connect_timeout": CONNECT_TIMEOUT,
        "socket_timeout": SOCKET_TIMEOUT,
        "block": BLOCK_MS / 1000,
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        "keepalive": KEEPALIVE,
        "retries": RETRIES,
    }
    chosen = {
        name: given[name] if given.get(name) is not None else from_url.get(name, default)
        for name, default in defaults.items()
    }
    settings: dict[str, Any] = {
        name: _seconds(name, chosen[name], zero=name in ("health_check_interval", "keepalive"))
        for name in defaults
        if name != "retries"
    }
    retries = chosen["retries"]
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise StoreError(f"Redis store: retries must be a whole number, 0 or more: {retries!r}")
    settings["retries"] = retries
    rest = urlencode([(option, value) for option, value in query if option not in URL_OPTIONS])
    return parts._replace(query=rest).geturl(), settings


class _Closed:
    """Whether a RedisLog was closed: shared by the backoffs of all its connections."""

    __slots__ = ("closed",)

    def __init__(self) -> None:
        self.closed = False


class _Backoff(EqualJitterBackoff):
    """redis-py's EqualJitterBackoff, that ends the retries once the log is closed: closing
    disconnects the followers' connections, and their XREAD must then fail, not reconnect."""

    def __init__(self, state: _Closed) -> None:
        super().__init__(cap=BACKOFF_CAP, base=BACKOFF_BASE)
        self.state = state

    def __deepcopy__(self, memo: dict[int, Any]) -> _Backoff:
        return _Backoff(self.state)  # each connection copies its Retry: the state stays shared

    def compute(self, failures: int) -> float:
        if self.state.closed:
            raise RedisConnectionError("the Redis store was closed")
        delay: float = super().compute(failures)
        return delay


async def _handshake(connection: Any) -> None:
    """A new connection's handshake (redis-py's `on_connect`), without a health check: the
    connection was just made. redis-py 5.x health-checks the handshake's commands too, and when
    the server does not answer the PING, its retry reconnects and handshakes again, and so on
    without end: a stopped server would hang every command instead of timing it out."""
    loop = asyncio.get_running_loop()
    connection.next_health_check = loop.time() + connection.health_check_interval
    await connection.on_connect()


def _connection_options(
    settings: dict[str, Any], socket_timeout: float, state: _Closed
) -> dict[str, Any]:
    """What each connection of a pool is given: every timeout agui depends on, explicitly."""
    keepalive = settings["keepalive"]
    keepalive_options: dict[int, int] = {}
    if keepalive:
        idle = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)
        for option, value in (
            (idle, max(1, math.ceil(keepalive))),
            (getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
            (getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_PROBES),
        ):
            if option is not None:
                keepalive_options[option] = value
    backoff = _Backoff(state)
    return {
        "socket_connect_timeout": settings["connect_timeout"],
        "socket_timeout": socket_timeout,
        "health_check_interval": settings["health_check_interval"],
        "socket_keepalive": bool(keepalive),
        "socket_keepalive_options": keepalive_options,
        "retry": Retry(backoff, settings["retries"]),
        # redis-py 5.x retries only the errors listed here (and a pipeline's timeouts only with
        # retry_on_timeout); later versions read them from `retry`, and accept both
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
        "retry_on_timeout": True,
        "redis_connect_func": _handshake,
    }


class RedisLog(EventLog):
    """The event log in Redis (`redis://HOST:PORT/DB`).

    The timeouts (module constants of the same names in capitals give the defaults):
    `connect_timeout` seconds to connect; `socket_timeout` seconds for a command's reply;
    `block` seconds of one XREAD BLOCK of a follower, whose connection times out after
    `block + socket_timeout`; `health_check_interval` seconds idle before a connection is
    PINGed before use (0: never); `keepalive` seconds idle before TCP keep-alive probes (0: off);
    `retries` of a command whose connection dropped or timed out, with backoff. A parameter left
    None takes the URL's query option of redis-py's name (`socket_connect_timeout`,
    `socket_timeout`, `health_check_interval`, `socket_keepalive`) when the URL has it, else the
    default: a parameter wins over the URL, the URL over the default. The URL's other options go
    to redis-py as they are."""

    def __init__(
        self,
        url: str,
        retention: Retention | None = None,
        *,
        prefix: str = "agui:",
        connect_timeout: float | None = None,
        socket_timeout: float | None = None,
        block: float | None = None,
        health_check_interval: float | None = None,
        keepalive: float | None = None,
        retries: int | None = None,
    ) -> None:
        self.retention = retention if retention is not None else Retention()
        self.prefix = prefix
        given = {
            "connect_timeout": connect_timeout,
            "socket_timeout": socket_timeout,
            "block": block,
            "health_check_interval": health_check_interval,
            "keepalive": keepalive,
            "retries": retries,
        }
        try:
            url, settings = _settings(url, given)
        except ValueError as error:
            raise StoreError(f"cannot use the Redis store URL {url!r}: {error}") from None
        self.settings: dict[str, Any] = settings
        """The timeouts in use (the parameters' names), after the URL's options and defaults."""
        self._block_ms = max(1, round(settings["block"] * 1000))
        tail_timeout = settings["block"] + settings["socket_timeout"]
        self._closed = _Closed()
        try:
            # Commands share a bounded pool (a caller waits for a free connection); each follower
            # waiting for new events holds a connection of the tails' pool for its XREAD BLOCK.
            # Typed Any: with decode_responses=False the replies are bytes, not the unions of
            # redis-py's annotations.
            commands = aioredis.BlockingConnectionPool.from_url(
                url,
                max_connections=COMMAND_CONNECTIONS,
                timeout=None,
                **_connection_options(settings, settings["socket_timeout"], self._closed),
            )
            tails = aioredis.ConnectionPool.from_url(
                url,
                max_connections=TAIL_CONNECTIONS,
                **_connection_options(settings, tail_timeout, self._closed),
            )
        except (ValueError, RedisError) as error:
            raise StoreError(f"cannot use the Redis store URL {url!r}: {error}") from None
        # A write's token: unique among every worker's writes (a random prefix per instance).
        self._instance = secrets.token_hex(8)
        self._writes = itertools.count()
        self._redis: Any = aioredis.Redis(connection_pool=commands)
        self._tails: Any = aioredis.Redis(connection_pool=tails)
        self._start = self._redis.register_script(START)
        self._append = self._redis.register_script(APPEND)
        self._close_lost = self._redis.register_script(CLOSE_LOST)
        self._renew = self._redis.register_script(RENEW)
        self._stop = self._redis.register_script(STOP)
        self._list_threads = self._redis.register_script(LIST_THREADS)
        self._delete_thread = self._redis.register_script(DELETE_THREAD)
        self._usage = self._redis.register_script(USAGE)
        ttl = self.retention.run_ttl_seconds
        self._ttl_ms = 0 if ttl is None else max(1, round(ttl * 1000))
        limit = self.retention.max_events_per_run
        self._max_events = 0 if limit is None else max(1, limit)  # 0: no limit
        limit = self.retention.max_runs_per_thread
        self._max_runs = 0 if limit is None else max(1, limit)

    def _token(self) -> str:
        """A new write's token: a retry of the write (redis-py resends the same arguments) is
        known by it, and answered with what the write did instead of being done again."""
        return f"{self._instance}.{next(self._writes)}"

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    # ── writes ──────────────────────────────────────────────────────────────────────────────

    async def start_run(
        self, record: RunRecord, input: bytes, *, exclusive: bool, namespace: str = ""
    ) -> None:
        keys = [
            self._key("run", record.run_id),
            self._key("thread", record.thread_id),
            self._key("running", record.thread_id),
            self.prefix + "leases",
            self.prefix + "seq",
            self._key("threads", namespace),
        ]
        arguments: list[bytes | str | int] = [
            record.run_id,
            record.thread_id,
            record.owner,
            repr(record.started_at),
            repr(record.lease_until),
            int(record.stop_requested),
            bytes(input),
            int(exclusive),
            self._max_runs,
            self.prefix,
            self._token(),
            namespace,
        ]
        try:
            answer = await self._start(keys, arguments)
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        if answer == b"exists":
            raise RunExists(f"run {record.run_id!r} was already started")
        if answer.startswith(b"busy:"):
            running = answer[5:].decode()
            raise ThreadBusy(f"thread {record.thread_id!r} has a running run ({running!r})")

    async def append(
        self, run_id: str, events: Sequence[bytes], *, final: bool = False
    ) -> list[Cursor]:
        if not events:
            if final:
                raise StoreError("a final append needs the terminal event")
            if not await self._exists(run_id):
                raise UnknownRun(f"no run {run_id!r} in the log")
            return []
        lengths = b"" if len(events) == 1 else b",".join(b"%d" % len(e) for e in events)
        arguments: list[bytes | str | int] = [
            run_id,
            len(events),
            lengths,
            b"".join(events),
            int(final),
            self._max_events,
            self._ttl_ms,
            self.prefix,
            repr(time.time()),
            self._token(),
        ]
        try:
            answer = await self._append(
                [self._key("run", run_id), self._key("events", run_id)], arguments
            )
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        if answer == b"unknown":
            raise UnknownRun(f"no run {run_id!r} in the log")
        if answer == b"finished":
            raise StoreError(f"run {run_id!r} is finished: nothing can be appended")
        entry = answer.decode()
        return [f"{entry}.{index}" for index in range(len(events))]

    async def renew(self, run_id: str, owner: str, lease_until: float) -> bool:
        keys = [self._key("run", run_id), self.prefix + "leases"]
        try:
            return bool(await self._renew(keys, [run_id, owner, repr(lease_until)]))
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error

    async def request_stop(self, run_id: str) -> RunRecord:
        try:
            values = await self._stop([self._key("run", run_id)], [])
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        record = None if values is None else to_record(run_id, values)
        if record is None:
            raise UnknownRun(f"no run {run_id!r} in the log")
        return record

    async def close_lost(self, run_id: str, event: bytes, now: float) -> bool:
        keys = [self._key("run", run_id), self._key("events", run_id)]
        arguments: list[bytes | str | int] = [
            run_id,
            bytes(event),
            repr(now),
            self._ttl_ms,
            self.prefix,
            self._token(),
        ]
        try:
            return bool(await self._close_lost(keys, arguments))
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error

    async def list_threads(
        self, namespace: str, *, limit: int, before: int | None = None
    ) -> list[ThreadSummary]:
        if limit <= 0:
            return []
        top = "+inf" if before is None else f"({int(before)}"
        try:
            rows = await self._list_threads(
                [self._key("threads", namespace)], [self.prefix, top, limit]
            )
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        threads: list[ThreadSummary] = []
        for row in rows:
            thread, order, runs, run_id = row[:4]
            record = to_record(run_id.decode(), row[4:12])
            if record is None:  # pragma: no cover - the script checked the record's status
                continue
            data, lengths = row[12], row[13]
            event = None
            if data is not None:
                fields = {b"d": data} if lengths is None else {b"d": data, b"l": lengths}
                event = split(fields)[-1]
                if event[:1] == ELIDED:  # the run's first event, its only one yet
                    input = await self.get_input(run_id.decode())
                    event = None if input is None else restore_input(input, event)
            threads.append(
                ThreadSummary(
                    thread_id=thread.decode(),
                    order=int(order),
                    runs=int(runs),
                    last_run=record,
                    last_event=event,
                )
            )
        return threads

    async def delete_thread(self, namespace: str, thread_id: str) -> list[str]:
        keys = [
            self._key("thread", thread_id),
            self._key("running", thread_id),
            self._key("threads", namespace),
            self.prefix + "leases",
        ]
        try:
            removed = await self._delete_thread(keys, [self.prefix, thread_id, namespace])
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return list(dict.fromkeys(run_id.decode() for run_id in removed))

    async def usage(self, namespace: str) -> Usage:
        keys = [
            self._key("used", namespace),
            self._key("expiring", namespace),
            self._key("threads", namespace),
        ]
        try:
            used, threads = await self._usage(
                keys, [self.prefix, namespace, math.floor(time.time() * 1000)]
            )
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return Usage(bytes=int(used), threads=int(threads))

    async def prune(self, now: float) -> int:
        """Nothing to do: Redis expires finished runs by itself (PEXPIRE when they finish), and
        thread_runs drops the ids of expired runs from a thread's index as it meets them."""
        return 0

    # ── reads ───────────────────────────────────────────────────────────────────────────────

    async def _exists(self, run_id: str) -> bool:
        try:
            return bool(await self._redis.exists(self._key("run", run_id)))
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error

    async def get_run(self, run_id: str) -> RunRecord | None:
        try:
            values = await self._redis.hmget(self._key("run", run_id), RECORD_FIELDS)
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return to_record(run_id, values)

    async def get_input(self, run_id: str) -> bytes | None:
        try:
            value: bytes | None = await self._redis.hget(self._key("run", run_id), "input")
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return value

    async def _records(self, run_ids: Sequence[str]) -> list[RunRecord | None]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for run_id in run_ids:
                pipe.hmget(self._key("run", run_id), RECORD_FIELDS)
            rows = await pipe.execute()
        return [to_record(run_id, row) for run_id, row in zip(run_ids, rows, strict=True)]

    async def thread_runs(self, thread_id: str) -> list[RunRecord]:
        key = self._key("thread", thread_id)
        try:
            run_ids = [r.decode() for r in await self._redis.zrange(key, 0, -1)]
            records = await self._records(run_ids)
            gone = [r for r, record in zip(run_ids, records, strict=True) if record is None]
            if gone:
                await self._redis.zrem(key, *gone)  # expired: drop them from the index
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return [record for record in records if record is not None]

    async def expired(self, now: float) -> list[RunRecord]:
        try:
            run_ids = await self._redis.zrangebyscore(self.prefix + "leases", "-inf", f"({now!r}")
            records = await self._records([r.decode() for r in run_ids])
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error
        return [
            record
            for record in records
            if record is not None and record.status == "running" and record.lease_until < now
        ]

    async def read_batches(
        self,
        run_id: str,
        after: Cursor | None = None,
        *,
        follow: bool = False,
        limit: int | None = None,
    ) -> AsyncIterator[EventBatch]:
        run_key, stream = self._key("run", run_id), self._key("events", run_id)
        size = BATCH if limit is None else max(1, limit)
        try:
            status, last, trimmed = await self._redis.hmget(run_key, ("status", "last", "trimmed"))
            if status is None:
                raise UnknownRun(f"no run {run_id!r} in the log")
            skip: tuple[str, int] | None = None
            if after is not None:
                skip = await self._check(run_id, stream, after, last, trimmed is not None)
            start = "-" if skip is None else skip[0]
            count = FIRST_CHUNK  # the first events soon (a resume), then the rest in big steps
            cursors: list[str] = []
            events: list[bytes] = []  # what the last batch given left (less than `size`)
            while True:  # what is stored
                entries = await self._redis.xrange(stream, min=start, max="+", count=count)
                if entries:
                    start = "(" + entries[-1][0].decode()
                    await self._restore(run_key, entries)
                for batch in self._batches(entries, skip, size, cursors, events):
                    yield batch
                ended = bool(entries) and b"t" in entries[-1][1]
                if ended or len(entries) < count:
                    if events:
                        yield EventBatch(cursors=cursors, data=events)
                    if ended:
                        return
                    break
                count = CHUNK
            if not follow:
                return
            if start.startswith("("):
                position = start[1:]  # the last entry read
            else:
                position = "0-0" if skip is None else skip[0]
            while True:  # what comes
                reply = await self._tails.xread(
                    {stream: position}, count=CHUNK, block=self._block_ms
                )
                if not reply:
                    if not await self._redis.exists(run_key):
                        return  # dropped by retention while followed
                    continue
                entries = reply[0][1]
                position = entries[-1][0].decode()
                await self._restore(run_key, entries)
                cursors, events = [], []
                for batch in self._batches(entries, skip, size, cursors, events):
                    yield batch
                if events:
                    yield EventBatch(cursors=cursors, data=events)
                if b"t" in entries[-1][1]:
                    return
        except RedisError as error:
            raise StoreError(f"Redis store: {error}") from error

    async def _restore(self, run_key: str, entries: list[Any]) -> None:
        """The run's first event whole again, when `entries` hold it stored without its input
        (the first entry of the run's stream: agui.store.base.elide_input)."""
        fields = entries[0][1]
        data = fields[b"d"]
        if data[:1] != ELIDED:
            return
        input = await self._redis.hget(run_key, "input")
        if input is None:
            return  # the run was dropped meanwhile: its event is read as it is stored
        lengths = fields.get(b"l")
        if lengths is None:
            fields[b"d"] = restore_input(input, data)
            return
        first, _, rest = lengths.partition(b",")
        whole = restore_input(input, data[: int(first)])
        fields[b"d"] = whole + data[int(first) :]
        fields[b"l"] = b"%d,%s" % (len(whole), rest)

    @staticmethod
    def _batches(
        entries: list[Any],
        skip: tuple[str, int] | None,
        size: int,
        cursors: list[str],
        events: list[bytes],
    ) -> Iterator[EventBatch]:
        """The events of stream entries, added to `cursors` and `events` (what the previous
        entries left), in batches of `size` as soon as one is full: a resume's first batch does
        not wait for a whole reply's events. What is left stays in the two lists."""
        for entry_id, fields in entries:
            entry = entry_id.decode()
            data = split(fields)
            first = skip[1] + 1 if skip is not None and skip[0] == entry else 0
            cursors += [f"{entry}.{index}" for index in range(first, len(data))]
            events += data[first:] if first else data
            while len(events) >= size:
                yield EventBatch(cursors=cursors[:size], data=events[:size])
                del cursors[:size], events[:size]

    async def _check(
        self, run_id: str, stream: str, after: Cursor, last: bytes | None, trimmed: bool
    ) -> tuple[str, int]:
        """The entry and the index of a cursor the run produced; StoreError otherwise. A cursor
        older than the oldest entry kept is one of the run's only when retention dropped its
        first entries (`trimmed`): else it is before the run's first event, as memory and
        SQLite answer too."""
        ms, seq, index = parse_cursor(after)
        wrong = StoreError(f"run {run_id!r} has no event at cursor {after!r}")
        if not last or (ms, seq, index) > parse_cursor(last.decode()):
            raise wrong
        entry = f"{ms}-{seq}"
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xrange(stream, min=entry, max=entry)
            pipe.xrange(stream, min="-", max="+", count=1)
            found, oldest = await pipe.execute()
        if found:
            if index >= int(found[0][1][b"c"]):
                raise wrong
        elif not oldest or (ms, seq) > entry_key(oldest[0][0]) or not trimmed:
            raise wrong  # within what is kept, but no such entry; or before the run began
        return entry, index

    @property
    def closed(self) -> bool:
        """Whether `aclose` was called: what fails after it is the shutdown's doing."""
        return self._closed.closed

    async def aclose(self) -> None:
        self._closed.closed = True  # no retry from now on: the followers end, as they should
        await self._redis.aclose(close_connection_pool=True)
        await self._tails.aclose(close_connection_pool=True)
