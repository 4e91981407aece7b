"""report (see docs/design.md)."""
