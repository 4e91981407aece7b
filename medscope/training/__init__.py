"""training (see DESIGN.md)."""
