"""The benchmark-MCQ paper: contamination-controlled multiple-choice benchmarks from an institution's own paired
reports and volumes -- schemas and their approval checkpoints (``schema``), rule / LLM field
extraction (``extract``), schema-driven and report-derived questions with the report-grounded
check (``questions``), reports / volumes input and montages (``cohort``), per-study assembly
(``build``), generation calls as a sweep protocol (``generation``), the phantom cohort
(``phantom``) and the demo's inputs made from it (``demo_inputs``). The Ray jobs live in
``pipelines/benchgen.py``; evaluation is the ``benchmark_mcq`` protocol."""
