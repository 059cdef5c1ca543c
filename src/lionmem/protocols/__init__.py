"""The memory contract and the primitives it is built on; see [ADR-0092][adr-0092]."""
