"""
The pieces every study shares, each in one place: the study interface (`study`), results files
(`results`), `allennlp` in a subprocess (`allennlp`), the timing protocol (`timing`), run
directories (`runs`) and data paths (`data`).
"""
