"""The command-line interface: a thin client of the gateway (stdlib only on the hot path)."""
