"""The registry files (seed000.yaml ... seed003.yaml); a package so that they ship with the wheel."""
