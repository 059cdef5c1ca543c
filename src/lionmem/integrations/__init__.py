"""Bridges between lionmem's stores and the libraries that use the same memory seam.

Each bridge is a module of its own, behind an extra of the same name, and importing
this package loads none of them: [`lionmem.integrations.lionagi`][lionmem.integrations.lionagi]
needs `lionmem[lionagi]`.
"""
