"""CT volumes for the organ-presence probe (organ-presence paper; montage from the benchmark-MCQ paper): NIfTI loading
and canonical reorientation with checks (``nifti``), windowing, triple-window false colour and
the 12x12 montage (``render``), hysteretic slice presence, cohort co-occurrence and POPE-style
items (``presence``), one volume's build work (``build``), the probe's config (``config``) and
small synthetic CT volumes for the bench (``synthetic_ct``). The protocol itself (prompts, reply
reading, scoring, report) is ``medscope/protocols/organ_presence/``."""
