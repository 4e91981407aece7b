"""training (see docs/design.md)."""
