"""The final files of a projection: :mod:`.final_files` (:func:`write_outputs` and the
paths of the candidates parquet, answer-frequency JSONL and summary).
"""
