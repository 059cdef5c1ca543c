"""Conversation objects that own memory stores: `Branch` and `Session`.

See [ADR-0092][adr-0092-d4].
"""
