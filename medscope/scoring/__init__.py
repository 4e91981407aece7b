"""scoring (see docs/design.md)."""
