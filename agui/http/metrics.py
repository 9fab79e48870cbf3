"""Prometheus metrics of the server: what `AgentApp(agent, metrics=True)` reports, and
`GET /metrics` serves (the Prometheus text format, prometheus-client's).

The instruments of one registry are made once (`Metrics.of`), so every AgentApp of a process
reports into the same families, each under its own `agent` label (AgentApp's `name`). Labels are
the agent's name, the run's outcome and the transport only: never a thread or run id, whose
values have no bound.

What it costs: nothing per event. A run is counted at its start and its end (`run_started`,
`run_ended`). Events and bytes are counted by the sender of each response where it already
batches frames into writes (agui.http.response.send_frames keeps the totals on the response's
Clock, two additions per write, metrics on or off); a scrape adds up the responses going and
those that ended (`_SentCollector`), so a long stream's bytes show before its end. With metrics
off (the default) nothing here is imported.

See docs/operations.md for the names and their meaning.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from agui.http.response import Clock

__all__ = ["OUTCOMES", "AgentMeter", "Metrics"]

OUTCOMES = ("success", "interrupt", "cancelled", "error", "disconnected")
"""The values of the `outcome` label: RUN_FINISHED's outcome (success, interrupt, cancelled),
RUN_ERROR (error, whatever its code), or disconnected: the client left (or its connection
failed) before the run's terminal event was queued."""

_DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
_FIRST_EVENT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

_lock = threading.Lock()
_made: weakref.WeakKeyDictionary[CollectorRegistry, Metrics] = weakref.WeakKeyDictionary()


class Metrics:
    """The instruments of one registry (`Metrics.of(registry)`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.runs_started = Counter(
            "agui_runs_started",
            "Runs started (a POST that opened a stream, or a durable run that began executing).",
            ("agent",),
            registry=registry,
        )
        self.runs_ended = Counter(
            "agui_runs_ended",
            "Runs ended, by outcome: success, interrupt, cancelled (RUN_FINISHED's outcome), "
            "error (RUN_ERROR), disconnected (the client left before the terminal event).",
            ("agent", "outcome"),
            registry=registry,
        )
        self.runs_active = Gauge(
            "agui_runs_active", "Runs executing now.", ("agent",), registry=registry
        )
        self.run_duration = Histogram(
            "agui_run_duration_seconds",
            "Seconds from a run's start to its end, by outcome.",
            ("agent", "outcome"),
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.first_event = Histogram(
            "agui_time_to_first_event_seconds",
            "Seconds from a run's start to its first event written (to the client; with a "
            "store, to the event log).",
            ("agent",),
            buckets=_FIRST_EVENT_BUCKETS,
            registry=registry,
        )
        self.resumes = Counter(
            "agui_resumes",
            "Streams resumed (GET {path}/runs/{runId}/events, with a store).",
            ("agent",),
            registry=registry,
        )
        self.connects = Counter(
            "agui_connects",
            "Streams connected to a thread (GET {path}/threads/{threadId}/events, with a store).",
            ("agent",),
            registry=registry,
        )
        self.store_errors = Counter(
            "agui_store_errors",
            "Failures of the event log seen by this process (a write, a read, a lease renewal, "
            "the sweep).",
            ("agent",),
            registry=registry,
        )
        self.sent = _SentCollector()
        registry.register(self.sent)

    @classmethod
    def of(cls, registry: CollectorRegistry | None = None) -> Metrics:
        """The instruments in `registry` (None: prometheus-client's default REGISTRY), made at the
        first call: the AgentApps of a process given the same registry share them."""
        target = REGISTRY if registry is None else registry
        with _lock:
            made = _made.get(target)
            if made is None:
                made = _made[target] = cls(target)
            return made

    def for_agent(self, agent: str) -> AgentMeter:
        """The instruments of one agent name (the label children, resolved once)."""
        return AgentMeter(self, agent)


class AgentMeter:
    """One AgentApp's instruments, its `agent` label applied; what the server calls at a run's
    start and end and around each response."""

    __slots__ = (
        "_active",
        "_connects",
        "_ended",
        "_first",
        "_resumes",
        "_started",
        "_store_errors",
        "agent",
        "metrics",
    )

    def __init__(self, metrics: Metrics, agent: str) -> None:
        self.metrics = metrics
        self.agent = agent
        self._started = metrics.runs_started.labels(agent)
        self._active = metrics.runs_active.labels(agent)
        self._first = metrics.first_event.labels(agent)
        self._resumes = metrics.resumes.labels(agent)
        self._connects = metrics.connects.labels(agent)
        self._store_errors = metrics.store_errors.labels(agent)
        self._ended: dict[str, tuple[Any, Any]] = {}
        for outcome in OUTCOMES:  # each series exists from the start, at 0
            self._ended[outcome] = (
                metrics.runs_ended.labels(agent, outcome),
                metrics.run_duration.labels(agent, outcome),
            )
        for transport in _TRANSPORTS:
            metrics.sent.declare(agent, transport)

    def run_started(self) -> None:
        self._started.inc()
        self._active.inc()

    def run_ended(self, outcome: str, seconds: float, first_event: float | None) -> None:
        """A run ended after `seconds`, its first event written `first_event` seconds after its
        start (None: none was)."""
        ended, duration = self._ended[outcome]
        ended.inc()
        duration.observe(seconds)
        self._active.dec()
        if first_event is not None:
            self._first.observe(first_event)

    def run_closed(self, outcome: str, seconds: float) -> None:
        """A run another worker executed ended here after `seconds` (its worker was lost and this
        one closed it): counted as ended, never active here."""
        ended, duration = self._ended[outcome]
        ended.inc()
        duration.observe(seconds)

    def resumed(self) -> None:
        self._resumes.inc()

    def connected(self) -> None:
        self._connects.inc()

    def store_failed(self) -> None:
        self._store_errors.inc()

    def streaming(self, clock: Clock, binary: bool) -> None:
        """A response begins: its sender's totals (on `clock`) count from now on."""
        self.metrics.sent.follow(clock, self.agent, _transport(binary))

    def streamed(self, clock: Clock, binary: bool) -> None:
        """The response is over: its totals are kept with the ended ones."""
        self.metrics.sent.end(clock, self.agent, _transport(binary))


_TRANSPORTS = ("sse", "protobuf")


def _transport(binary: bool) -> str:
    return "protobuf" if binary else "sse"


class _SentCollector(Collector):
    """agui_sent_events_total and agui_sent_bytes_total: at each scrape, the totals of the
    responses that ended plus those of the responses going (their Clock's, which the sender
    updates per write)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended: dict[tuple[str, str], list[int]] = {}  # (agent, transport) -> [events, bytes]
        self._live: dict[Clock, tuple[str, str]] = {}

    def declare(self, agent: str, transport: str) -> None:
        with self._lock:
            self._ended.setdefault((agent, transport), [0, 0])

    def follow(self, clock: Clock, agent: str, transport: str) -> None:
        with self._lock:
            self._live[clock] = (agent, transport)

    def end(self, clock: Clock, agent: str, transport: str) -> None:
        with self._lock:
            self._live.pop(clock, None)
            totals = self._ended.setdefault((agent, transport), [0, 0])
            totals[0] += clock.events
            totals[1] += clock.bytes

    def collect(self) -> Iterable[Any]:
        with self._lock:
            sums = {key: list(value) for key, value in self._ended.items()}
            for clock, key in self._live.items():
                totals = sums.setdefault(key, [0, 0])
                totals[0] += clock.events
                totals[1] += clock.bytes
        events = CounterMetricFamily(
            "agui_sent_events",
            "Events written to clients (SSE or protobuf frames, keep-alive comments left out).",
            labels=("agent", "transport"),
        )
        sent = CounterMetricFamily(
            "agui_sent_bytes",
            "Bytes of response bodies written to clients' streams.",
            labels=("agent", "transport"),
        )
        for (agent, transport), (count, size) in sorted(sums.items()):
            events.add_metric((agent, transport), count)
            sent.add_metric((agent, transport), size)
        return _two(events, sent)

    def describe(self) -> Iterable[Any]:
        # Without this, registering calls collect() to learn the names.
        return _two(
            CounterMetricFamily("agui_sent_events", "", labels=("agent", "transport")),
            CounterMetricFamily("agui_sent_bytes", "", labels=("agent", "transport")),
        )


def _two(first: Any, second: Any) -> Iterator[Any]:
    yield first
    yield second
