"""A real-world corpus for the edit engine (issue 17).

Real commits of public Python projects (``cases.jsonl.gz``, made by ``generate.py`` from
fetched git histories) are rendered as model answers in the formats and with the
sloppiness real models show (``formats.py``), applied with the real ``spark apply`` code
path to a temporary copy of the files, and compared byte for byte with what the commit
really wrote (``runner.py``).  ``bench/bench_edit_corpus.py`` runs it all;
``tests/core/edits/test_corpus_sample.py`` runs a sample in CI.
"""
