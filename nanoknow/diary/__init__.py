"""The diary benchmark as Prato et al. run it: fine-tune pretrained models, validate, compare.

API (library functions take a settings dataclass; the CLI modules only fill it):

* :mod:`.finetune` – :class:`~.finetune.FinetuneSettings` and :func:`~.finetune.finetune`:
  fine-tune one Hugging Face model (decoder-only or encoder-decoder) on a ``nanoknow diary make``
  folder with transformers' ``Trainer``, validate by greedy recall every N steps, stop at the
  plateau, keep the best checkpoint in the HF layout under ``RUN/best``.
* :mod:`.sweep` – :func:`~.sweep.load_grid` (a YAML grid: models x dataset sizes x variants) and
  :func:`~.sweep.run_sweep` (resumable run by run: data, fine-tune, lm-eval on the test split).
* :mod:`.figures` – :func:`~.figures.load_results` (rows from lm-eval output folders) and
  :func:`~.figures.draw_figures` (accuracy vs model size; simplified minus standard).
* Helpers: :mod:`.examples` (training/validation examples in the paper's formats),
  :mod:`.recall` (greedy recall scored like the lm-eval tasks), :mod:`.callbacks` (plateau stop,
  time limit, JSONL log), :mod:`.run_info` (what a run records about its model).
* :mod:`.train`, :mod:`.tiny_model`: the from-scratch tiny nanochat recipe (``nanoknow diary train``).
* CLI flags: ``nanoknow/commands/diary_*.py``.
"""
