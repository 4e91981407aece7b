"""Rendering primitives every protocol's report uses: one document model written as Markdown and
as self-contained HTML (``document``), thin-cell marking (``thin``), figure pieces (``plots``) and
the gallery panels (``gallery``). Below the protocols; the document assembly that asks each scored
run's protocol for its sections is ``medscope.report`` above them."""
