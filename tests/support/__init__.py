"""Shared test helpers: the event corpus, hypothesis strategies, wire-byte builders,
CLI runners and validation cases."""
