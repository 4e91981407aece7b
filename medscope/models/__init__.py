"""models (see docs/design.md)."""
