"""frontdesk: the facility's front desk for coding agents.

Kept import-free on purpose: the CLI, hooks and shims start as fresh processes on the agent's hot path.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
