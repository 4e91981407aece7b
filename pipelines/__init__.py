"""The jobs. Each is ``python -m pipelines.<job> --config F`` and a verb of the ``medscope`` CLI.
Ray Data / Train / Tune and actors live here only; the science they run is in ``medscope``."""
