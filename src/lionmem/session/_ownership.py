"""The lock that serialises every change of branch ownership across sessions, and
the lazy creation of a branch's or a session's store.

One process-wide lock, not one per session: two sessions claiming the same branch
from two threads must see each other's claim. See [ADR-0092][adr-0092-d4].
"""

from __future__ import annotations

import threading

OWNERSHIP_LOCK = threading.RLock()
