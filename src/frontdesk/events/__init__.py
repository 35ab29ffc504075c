"""Typed events, the journal-backed bus, and sinks."""
