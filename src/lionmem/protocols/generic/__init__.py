"""Identity, ordering and collection primitives shared by every lionmem model.

See [ADR-0092][adr-0092-d3].
"""
