"""The diary knowledge-extent benchmark's data (Prato et al.).

* :mod:`.generator`: :func:`generate_diary_set` (deterministic), :class:`DiarySet`;
* :mod:`.files`: the on-disk layout (:func:`write_diary_set`, :func:`read_qa_split`, manifest);
* :mod:`.names`, :mod:`.schema`: name pools and row fields.
"""
