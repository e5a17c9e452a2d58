"""The NanoKnow question/answer/qrels files.

* :mod:`.layout`: file names in the upstream layout;
* :mod:`.files`: readers (:func:`read_answers`, :func:`read_topics`, :func:`read_qrels`,
  :func:`load_questions`) and the :class:`Question` record;
* :mod:`.manifest`, :mod:`.fetch`: the pinned upstream files and their download;
* :mod:`.check_files`: :func:`verify_data_dir` (``nanoknow data verify``);
* :mod:`.data_root`: :func:`resolve_data_dir`, one resolution order for every caller.
"""
