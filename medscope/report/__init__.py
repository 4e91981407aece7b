"""report (see DESIGN.md)."""
