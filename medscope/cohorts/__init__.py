"""cohorts (see DESIGN.md)."""
