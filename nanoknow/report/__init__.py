"""``nanoknow report``: lm-eval output folders -> tables and figures.

:mod:`.load` (results and samples), :mod:`.stats` (scores, Wilson intervals, buckets),
:mod:`.tables` (summary, frequency and distractor rows), :mod:`.plots`,
:func:`~.write_report.write_report` (the entry point).
"""
