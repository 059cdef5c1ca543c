"""Filter operators for `MemoryQuery.filters`: `Ne`, `Gt`, `Ge`, `Lt`, `Le`, `In`,
`NotIn`, `Present`, `Missing`, `AnyOf` and `AllOf`.

```python
from lionmem import MemoryQuery
from lionmem.filters import Ge, In

query = MemoryQuery(filters={"importance": Ge(3), "kind": In(["fact", "preference"])})
```

Defined in [`lionmem.protocols.filters`][lionmem.protocols.filters]; see
[ADR-0099][adr-0099].
"""

# The same names, each the object the core defines.
from lionmem.protocols.filters import *  # noqa: F403
from lionmem.protocols.filters import __all__ as __all__
