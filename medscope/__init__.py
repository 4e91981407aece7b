"""MedScope: measure and train evidence sensitivity in medical vision-language models.

The science lives here as plain functions on numpy / torch / pyarrow; the Ray jobs that
scale it live in ``pipelines``. Nothing in this package imports ray.
"""

__version__ = "0.1.0"

# The I/O modules moved into medscope.io in 0.2. A protocol written outside the package for 0.1
# imported them from here (``from medscope import records, layout``); for one release those
# names still resolve, with a warning, and then go.
_MOVED_TO_IO = {"storage": "storage", "records": "records", "layout": "layout", "parts": "parts",
                "tablescan": "tablescan", "safe_text": "safe_text", "safe_io": "guarded"}


def __getattr__(name: str):
    if name in _MOVED_TO_IO:
        import importlib
        import warnings

        new = f"medscope.io.{_MOVED_TO_IO[name]}"
        warnings.warn(f"medscope.{name} moved to {new}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)
    raise AttributeError(f"module 'medscope' has no attribute {name!r}")
