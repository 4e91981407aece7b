"""Volumes and the organ-presence probe (seed 003; montage from seed 001).

nifti (canonical loading, checks), render (windows, triple false colour, montage), presence
(hysteretic slice presence, cohort co-occurrence, POPE-style items), build (one volume's work),
replies (reading replies, hedge lexicon), metrics (case-clustered probe metrics), probe_protocol
(the EvalProtocol), report (the report section), config (ProbeConfig), synthetic_ct (bench volumes).
"""
