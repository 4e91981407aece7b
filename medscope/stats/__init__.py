"""stats (see DESIGN.md)."""
