"""Conversation objects that own memory stores: `Branch` and `Session`."""
