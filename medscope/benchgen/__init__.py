"""benchgen (see DESIGN.md)."""
