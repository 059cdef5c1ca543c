"""Deprecated: `FidelityProfile` and its dimensions, where the kit's users once imported
them. Import them from `lionmem.testing` or
[`lionmem.protocols.profile`][lionmem.protocols.profile] instead; importing this
module warns, and a later release removes it.

The promise vocabulary lives in the core, so that stores declare their profile
without importing the kit; this module names the same objects. Unlike
`lionmem.protocols.types`, which mirrors a module the reference record names
(ADR-0092, D1), nothing in the record needs this one. See [ADR-0093][adr-0093].
"""

import warnings

# The same names, each the object the core defines.
from lionmem.protocols.profile import *  # noqa: F403
from lionmem.protocols.profile import __all__ as __all__

warnings.warn(
    "lionmem.testing.profile is deprecated; import the profile from lionmem.testing or lionmem.protocols.profile",
    DeprecationWarning,
    stacklevel=2,
)
