"""Everything the offline demo needs: :func:`~.run_demo.run_demo`, the sample corpus
with planted answers (:mod:`.sample_corpus`, also ``nanoknow make-sample-corpus``), questions
about invented facts (:mod:`.invented_facts`) (the bundled SmolLM2 is :mod:`nanoknow_common.bundled_model`).
"""
