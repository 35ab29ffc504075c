"""One error tree for frontdesk, mapped to exit codes and HTTP statuses here and nowhere else.

    FrontdeskError                      exit 1, HTTP 500
    ├── UserError                       exit 2, HTTP 400   bad input from outside
    │   ├── SpecError                   exit 2, HTTP 422   a spec that does not validate (field, value, expected)
    │   ├── ConfigError                 exit 2, HTTP 400   frontdesk.toml or a setting that does not validate
    │   └── Denied                      exit 2, HTTP 403   a guard rule said no
    │       └── Forbidden               exit 77, HTTP 403  the caller may not read or act on this object (EX_NOPERM)
    │           └── Unauthenticated     exit 77, HTTP 401  no acceptable credential (bad token, refused MUNGE)
    ├── NotFound                        exit 3, HTTP 404   unknown job, session, lesson
    ├── Conflict                        exit 4, HTTP 409   the request clashes with the current state
    ├── GatewayUnavailable              exit 69, HTTP 503  no gateway at the socket/address, or it went away
    │   └── RendezvousRefused           exit 69            the socket or its directory belongs to someone untrusted
    ├── HostUnreachable                 exit 69            ssh could not reach another node (sessions resume --on)
    ├── WaitTimeout                     exit 124, HTTP 408 a wait ran past its --timeout
    ├── RateLimited                     exit 75, HTTP 429  a budget (storage metadata) is empty: retry_after s
    └── BackendError                    exit 70, HTTP 502  the backend (a subprocess, Slurm) failed
        └── CommandFailed                                   one subprocess failed: argv, exit code, stderr tail

Every error carries a one-line message; the CLI prints `frontdesk: <message>` and exits with `exit_code`.
Every refusal of identity or permission (Forbidden, Unauthenticated) exits 77, whichever side found it.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = [
    "BackendError",
    "CommandFailed",
    "ConfigError",
    "Conflict",
    "Denied",
    "Forbidden",
    "FrontdeskError",
    "GatewayGone",
    "GatewayUnavailable",
    "HostUnreachable",
    "NotFound",
    "RateLimited",
    "RendezvousRefused",
    "SpecError",
    "Unauthenticated",
    "UserError",
    "WaitTimeout",
    "from_payload",
]


class FrontdeskError(Exception):
    """Base of every error frontdesk raises on purpose."""

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500
    code: ClassVar[str] = "error"

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = " ".join(message.split()) or self.code
        self.fields = fields

    def to_payload(self) -> dict[str, Any]:
        """The JSON body an API answer or `--json` output carries for this error."""
        return {"error": self.code, "message": self.message, **self.fields}


class UserError(FrontdeskError):
    """Bad input from outside: a flag, a body, a payload."""

    exit_code = 2
    http_status = 400
    code = "bad_input"


class SpecError(UserError):
    """A job spec that does not validate."""

    http_status = 422
    code = "bad_spec"


class ConfigError(UserError):
    """A setting or configuration file that does not validate."""

    code = "bad_config"


class Denied(UserError):
    """A guard rule or an access rule refused the request."""

    http_status = 403
    code = "denied"


class Forbidden(Denied):
    """The caller is not allowed to read or act on this object (another user's job, session, lesson)."""

    exit_code = 77  # EX_NOPERM (sysexits.h), next to 69 EX_UNAVAILABLE and 70 EX_SOFTWARE
    code = "forbidden"
    journalled: bool = False
    """Set by the gateway once the refusal is an `access.denied` event (so it is journalled once)."""


class Unauthenticated(Forbidden):
    """No acceptable credential on a TCP request: a bad or revoked token, a refused MUNGE credential."""

    http_status = 401
    code = "unauthenticated"


class NotFound(FrontdeskError):
    """An unknown job, session, lesson or other object."""

    exit_code = 3
    http_status = 404
    code = "not_found"


class Conflict(FrontdeskError):
    """The request clashes with the current state (e.g. cancelling a finished job)."""

    exit_code = 4
    http_status = 409
    code = "conflict"


class GatewayUnavailable(FrontdeskError):
    """No gateway answers at the configured socket or address."""

    exit_code = 69
    http_status = 503
    code = "unavailable"


class RendezvousRefused(GatewayUnavailable):
    """The socket (or its directory) belongs to an untrusted user or others may replace it: nothing was sent."""

    code = "rendezvous"


class GatewayGone(GatewayUnavailable):
    """The gateway went away after the request was sent: it may have been carried out (a submission is sent
    again with its request id, which finds the job it made)."""


class HostUnreachable(FrontdeskError):
    """ssh could not connect to or log in on another node (`frontdesk sessions resume --on HOST`)."""

    exit_code = 69  # EX_UNAVAILABLE
    http_status = 502
    code = "unreachable"


class WaitTimeout(FrontdeskError):
    """A wait ran past its timeout."""

    exit_code = 124
    http_status = 408
    code = "timeout"


class RateLimited(FrontdeskError):
    """A per-principal budget is empty; `retry_after` (seconds) says when to ask again."""

    exit_code = 75  # EX_TEMPFAIL (sysexits.h)
    http_status = 429
    code = "rate_limited"


class BackendError(FrontdeskError):
    """The backend failed (a subprocess, the scheduler)."""

    exit_code = 70
    http_status = 502
    code = "backend"


class CommandFailed(BackendError):
    """One subprocess failed; carries argv, exit code and the end of stderr."""

    code = "command_failed"

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        super().__init__(
            f"{argv[0] if argv else '?'} exited {returncode}: {tail}"[:400],
            argv=list(argv),
            returncode=returncode,
            stderr_tail=stderr[-2000:],
        )
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr


_BY_CODE: dict[str, type[FrontdeskError]] = {
    cls.code: cls
    for cls in (
        FrontdeskError,
        UserError,
        SpecError,
        ConfigError,
        Denied,
        Forbidden,
        Unauthenticated,
        NotFound,
        Conflict,
        GatewayUnavailable,
        RendezvousRefused,
        WaitTimeout,
        RateLimited,
        BackendError,
    )
}


def from_payload(payload: dict[str, Any]) -> FrontdeskError:
    """Rebuild the error an API answer describes (the client side of `to_payload`)."""
    cls = _BY_CODE.get(str(payload.get("error")), FrontdeskError)
    extra = {k: v for k, v in payload.items() if k not in ("error", "message")}
    return cls(str(payload.get("message", "gateway error")), **extra)
