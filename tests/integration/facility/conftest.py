"""Fixtures of the facility suite: real Unix users (alice, bob in lab1, carol, fdadmin-user in fdadmin) and a
root facility gateway they reach through the CLI, HTTP over the Unix socket, TCP tokens and MUNGE."""

from facility_helpers import facility, facility_users

__all__ = ["facility", "facility_users"]
