"""benchgen (see docs/design.md)."""
