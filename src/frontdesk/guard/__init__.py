"""The guard: checks commands before they run (rules, context, taint, secrets, service exposure).

Import-light on purpose: `from frontdesk.guard.secrets import redact` runs on every report, and
`frontdesk guard hook` runs on every shell call of an agent. Import the submodules you need.
"""

__all__: list[str] = []
