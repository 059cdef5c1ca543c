"""The durable stores' errors, where their users have long imported them.

Each name is the object [`lionmem.errors`][lionmem.errors] defines, under the root
`LionmemError`. Governed by [ADR-0096][adr-0096] and [ADR-0097][adr-0097].
"""

# The same names, each the object lionmem.errors defines.
from lionmem.errors import IncompatibleDatabaseError, MissingSchemaError, StoreClosedError, StoreUnavailableError

__all__ = ["IncompatibleDatabaseError", "MissingSchemaError", "StoreClosedError", "StoreUnavailableError"]
