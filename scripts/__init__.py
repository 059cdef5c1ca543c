"""The project's own tools: the locks, the wheel check, the diagrams and the API snapshot."""
