"""qc (see docs/design.md)."""
