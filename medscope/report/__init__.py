"""The report's shared machinery: one document model rendered as Markdown and as
self-contained HTML (``render``), the build that asks each scored run's protocol for its
sections (``build``), the opening summary written from the numbers (``summary``), thin-cell
marking (``thin``), figure pieces (``plots``) and the gallery panels (``gallery``). What a
section says belongs to its protocol (``medscope/protocols/<name>/report.py``)."""
