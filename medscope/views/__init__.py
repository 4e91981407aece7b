"""views (see docs/design.md)."""
