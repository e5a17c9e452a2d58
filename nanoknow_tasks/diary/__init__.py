"""Diary knowledge-extent benchmark (Prato et al., "Do Large Language Models Know How Much They Know?").

Modules: :mod:`.schema` (entry/question/answer texts), :mod:`.names` (diarist names),
:mod:`.build` (the deterministic in-memory generator), :mod:`.files` (the on-disk layout of
``nanoknow diary make``), :mod:`.generate` (that command), :mod:`.metrics` (recall scoring),
:mod:`.loaders` (lm-eval datasets) and :mod:`.train` (``nanoknow diary train``).
"""
