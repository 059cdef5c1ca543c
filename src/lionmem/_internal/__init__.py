"""Helpers that several lionmem packages share and none of them owns.

Nothing here is public: lionmem's own packages import these modules, and they may
change in any release. What one package alone needs stays in that package (as
`lionmem.adapters._codec` does); only what two or more need lives here. The docs'
Architecture page shows where this package sits among the layers.
"""
