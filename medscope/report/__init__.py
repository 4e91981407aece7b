"""The report's document assembly (``build``): asks each scored run's protocol for its sections and
writes them as one Markdown and one HTML document. Above the protocols; the rendering primitives
they use are ``medscope.render`` below them, and what a section says belongs to its protocol
(``medscope/protocols/<name>/report.py``)."""
