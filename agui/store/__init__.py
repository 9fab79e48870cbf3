"""Durable runs: the event log a server with a store keeps every run in.

* `base`: the contract every backend provides (`EventLog`), the run record, cursors, retention.

Backends, chosen by URL: `memory://` (one process), `sqlite:///PATH` (one machine, survives a
restart), `redis://HOST:PORT/DB` (many workers; `pip install 'agui[redis]'`).
"""
