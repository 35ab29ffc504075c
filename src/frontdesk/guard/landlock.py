"""Moved to `frontdesk.backends.landlock` (the embedded backend applies it; the core must not import guard/).

This name stays an alias of that module (same object, so monkeypatching either patches both).
"""

import sys

from frontdesk.backends import landlock as _landlock

sys.modules[__name__] = _landlock
