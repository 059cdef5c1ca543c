"""Rewrite api/lionmem.json after an intended change of the public API.

Run: python scripts/update_api_snapshot.py, and commit the snapshot with the change.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.api_surface import SNAPSHOT, write_snapshot

write_snapshot()
print(f"wrote {SNAPSHOT}")
