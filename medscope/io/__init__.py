"""Everything MedScope reads and writes, below the science: one module per concern.

Lowest first (``tests/test_import_graph.py`` holds the order):

- :mod:`~medscope.io.storage`: URIs over fsspec (paths, ``s3://``, ``memory://``), atomic and
  write-once writes.
- :mod:`~medscope.io.bounded`: one file's bytes within a byte budget, or a ``InputRejected``.
- :mod:`~medscope.io.safe_text`: text and JSON decoded with their guards; URLs with credentials
  redacted.
- :mod:`~medscope.io.folder_lock`: one writer per output folder.
- :mod:`~medscope.io.table_values`: values a schema's types allow and no table may hold.
- :mod:`~medscope.io.parquet_bytes`: Parquet read from bytes without starting Arrow's thread pools.
- :mod:`~medscope.io.records`: the shared tables' Arrow schemas, the registry protocols add theirs
  to, and their readers and writers.
- :mod:`~medscope.io.layout`: every output folder's file names; folder-or-table resolution.
- :mod:`~medscope.io.parts`: write-once part folders and their compaction.
- :mod:`~medscope.io.guarded`: the guarded reader of every cohort input (folder walks, images,
  NIfTI inflation, CSV rows), turning bad files into ``InputRejected`` rows.
- :mod:`~medscope.io.tablescan`: a table streamed a batch at a time, or looked up by id.

Import the modules, not the package: ``from medscope.io import records, storage``.
"""
