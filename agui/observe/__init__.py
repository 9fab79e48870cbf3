"""Observability below every layer that runs agents: what a log line about a run carries."""
