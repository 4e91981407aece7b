"""scoring (see DESIGN.md)."""
