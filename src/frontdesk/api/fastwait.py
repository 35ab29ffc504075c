"""POST /v1/wait without FastAPI's routing: the long-poll that a job's end answers, as a plain ASGI layer.

Like `api/fastsubmit.py` (the model), it sits inside `Limits` and `Identify` (body cap, authentication and peer
credentials: unchanged) and takes only a well-formed request: a JSON object (`Content-Type: application/json`)
that `WaitBody` accepts. Anything else goes on to the full route with its body replayed, so every refusal of a
malformed body is FastAPI's own answer. A request taken here runs the route's own code (`api.jobs.wait_for`,
which also builds the answer), and a `FrontdeskError` is answered by the app's one error handler.

At a job's end this leaves the answer's way out without FastAPI's routing, dependency and exception layers
(and the request's way in: the parse and the checks before the long-poll parks, off the CPU the other
parked clients' ends need). `tests/integration/test_fast_wait.py` compares both routes byte for byte.
"""

from __future__ import annotations

from starlette.responses import Response

from frontdesk.api.fastsubmit import FastRoute
from frontdesk.api.jobs import WaitBody, wait_for
from frontdesk.identity import Caller

__all__ = ["FastWait"]


class FastWait(FastRoute[WaitBody]):
    """Answers a well-formed `POST /v1/wait` itself; passes everything else on unchanged."""

    path = "/v1/wait"
    body = WaitBody

    async def answer(self, caller: Caller, parsed: WaitBody) -> Response:
        return await wait_for(self.gw, self.access, caller, parsed)
