"""views (see DESIGN.md)."""
