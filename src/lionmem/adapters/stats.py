"""`StoreStats`, where the durable stores' users have long imported it.

The name is the object [`lionmem.protocols.stats`][lionmem.protocols.stats] defines,
beside the `StatsStore` protocol. See [ADR-0100][adr-0100-d9].
"""

# The same name, the object the core defines.
from lionmem.protocols.stats import StoreStats

__all__ = ["StoreStats"]
