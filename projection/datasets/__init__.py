"""Datasets built from a projection.

* :mod:`.build`: :class:`BuildSettings`, :func:`build` (oracle passages, distractors, SQuAD context);
* :mod:`.built_layout`: the schema and folder layout of built datasets;
* :mod:`.squad_source`: SQuAD's own paragraphs joined by row;
* :mod:`.publish`: the Hub folder with its dataset card, and the upload.
"""
