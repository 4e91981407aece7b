"""qc (see DESIGN.md)."""
