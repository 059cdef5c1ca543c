"""The memory contract and the primitives it is built on."""
