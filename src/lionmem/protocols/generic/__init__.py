"""Identity, ordering and collection primitives shared by every lionmem model."""
