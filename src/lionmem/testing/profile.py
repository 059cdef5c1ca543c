"""`FidelityProfile` and its dimensions, where the kit's users have long imported them.

The promise vocabulary lives in the core, in
[`lionmem.protocols.profile`][lionmem.protocols.profile], so that stores declare
their profile without importing the kit; this module names the same objects. See
[ADR-0093][adr-0093].
"""

# The same names, each the object the core defines.
from lionmem.protocols.profile import *  # noqa: F403
from lionmem.protocols.profile import __all__ as __all__
