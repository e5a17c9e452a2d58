"""Shared helpers for the nanochat tests: tiny checkpoints of every generation, written once."""

from __future__ import annotations

import pytest

from nanochat_adapter.architectures import GENERATIONS

ALL_GENERATIONS = sorted(GENERATIONS)


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> dict:
    """``{generation: folder}`` of tiny random checkpoints in nanochat's on-disk format."""
    from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint

    root = tmp_path_factory.mktemp("nanochat")
    return {g: write_tiny_checkpoint(root / g, generation=g, seed=1) for g in ALL_GENERATIONS}


@pytest.fixture(scope="session")
def loaded_checkpoints(tiny_checkpoints) -> dict:
    """``{generation: LoadedCheckpoint}`` on CPU in fp32."""
    from nanochat_adapter.checkpoint import load_checkpoint

    return {g: load_checkpoint(folder, device="cpu") for g, folder in tiny_checkpoints.items()}
