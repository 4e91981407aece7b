"""volumes (see DESIGN.md)."""
