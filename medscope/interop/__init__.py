"""MedScope's benchmarks outside MedScope (docs/interop.md): an items table as a Hugging Face dataset
(:mod:`medscope.interop.hf_export`), the counterfactual views as an lmms-eval task
(:mod:`medscope.interop.lmms_task`, whose hooks live in :mod:`medscope.interop.lmms_hooks`), and
lmms-eval's logged samples read back as a MedScope eval run (:mod:`medscope.interop.lmms_import`).

The libraries are the ``interop`` extra's (``pip install medscope[interop]``); each module imports
them where it needs them, so importing the package needs none."""
