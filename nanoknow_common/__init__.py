"""Pieces every NanoKnow package shares; it imports none of them.

* :mod:`.errors`: :class:`NanoKnowInputError` (file, line, field), turned into exit 2 by the CLI;
* :mod:`.paths`: :func:`user_cache_dir`, the one user cache folder;
* :mod:`.bundled_model`: the small offline instruct model (SmolLM2-135M-Instruct, GGUF) that
  tests, the demo and the default verifier use;
* :mod:`.llm`: interchangeable text-generation backends (hf, OpenAI-compatible, vLLM) and
  :func:`~.llm.replies.visible_text`, a reply without its thinking block.
"""
