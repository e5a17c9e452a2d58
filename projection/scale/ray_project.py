"""``nanoknow project --ray``: the two projection stages on a Ray cluster (or a local Ray).

The chunks are the single-machine run's fixed chunks (``--chunk-size``), so work files, resume
and final outputs are shared with :mod:`projection.pipeline`:

* stage 1: one Ray task per unfinished chunk; each task opens the retriever itself
  (:func:`projection.stage1.retrievers.open_retriever`: the Lucene index path must be visible on
  every node, or ``--retriever rest`` so only the index host holds it). Ray tasks run in worker
  *processes*, one task at a time per process, which is what pyjnius/pyserini needs (it is not
  safe to call from several Python threads).
* stage 2: a pool of Ray actors, each loading its verifier once
  (:func:`projection.pipeline.make_verifier`) and judging whole chunks with
  :func:`projection.pipeline.verify_chunk` (``max_concurrency=1``: one chunk at a time).

The driver appends each chunk to ``stage1.jsonl`` / ``stage2.jsonl`` as soon as it comes back,
in whatever order chunks finish; :func:`projection.pipeline.read_chunks` keys them by chunk, and
the final files are written in chunk order, so they are byte-identical to a single-machine run.

Public: :func:`check_settings`, :func:`run_stages`, :func:`connect`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'nanoknow[ray]'"


def _import_ray():
    try:
        import ray
    except ImportError as err:
        raise NanoKnowInputError(f"Ray is not installed; {INSTALL_HINT}", field="--ray") from err
    return ray


@contextlib.contextmanager
def connect(address: str | None, num_cpus: int | None = None):
    """Join the Ray cluster at ``address`` (``auto``, ``ray://host:10001``, ``host:6379``) or, for
    ``None``/``local``, start a local Ray with ``num_cpus`` CPUs (default: all); shut down on exit
    only what this call started."""
    ray = _import_ray()
    if ray.is_initialized():  # a caller (script, notebook) already connected: use and keep it
        yield ray
        return
    local = address in (None, "", "local")
    kwargs = {"include_dashboard": False, "logging_level": logging.WARNING}
    try:
        if local:
            ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError) as err:
        raise NanoKnowInputError(f"cannot connect to the Ray cluster at {address!r}: {err}", field="--ray") from err
    log.info("Ray: %s", {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU", "memory")})
    try:
        yield ray
    finally:
        ray.shutdown()


def _unwrap(ray, err):
    """A bad-input error raised inside a task becomes the driver's own one-line error."""
    cause = getattr(err, "cause", None)
    if isinstance(err, ray.exceptions.RayTaskError) and isinstance(cause, NanoKnowInputError):
        return NanoKnowInputError(cause.reason, file=cause.file, line=cause.line, field=cause.field)
    return err


def _stage1_chunk(settings, chunk):
    """Stage-1 records of one chunk (runs in a Ray worker process)."""
    from projection.stage1.retrieval import stage1
    from projection.stage1.retrievers import open_retriever

    with open_retriever(settings) as (searcher, source):
        return stage1(searcher, source, chunk, k=settings.top_k, threads=settings.threads,
                      window_words=settings.window_words)


class _Verifier:
    """A Ray actor that loads the verifier once and judges whole chunks with it."""

    def __init__(self, settings):
        self.settings = settings
        self.backend = None

    def ready(self) -> bool:
        """Load the verifier now (so a bad model fails before any chunk is sent)."""
        if self.backend is None:
            from projection.pipeline import make_verifier

            self.backend = make_verifier(self.settings)
        return True

    def verify(self, index: int, chunk, records) -> tuple[int, list[dict]]:
        from projection.pipeline import verify_chunk

        self.ready()
        s = self.settings
        return index, verify_chunk(self.backend, chunk, records, first_true=s.verify == "first-true",
                                   max_new_tokens=s.max_new_tokens, mode=s.judge_mode)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None


def _largest_node_cpus(ray) -> int:
    return max((int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")), default=1)


def _verifier_resources(settings) -> dict:
    """One GPU per verifier on GPU devices and for vLLM; otherwise ``--threads`` CPUs (torch's threads)."""
    if settings.verifier == "vllm" or str(settings.device).startswith("cuda"):
        return {"num_cpus": 1, "num_gpus": 1}
    if settings.verifier == "openai":  # the work is on the server: one CPU drives the requests
        return {"num_cpus": 1}
    return {"num_cpus": settings.threads}


def _result(ray, ref, cancel=()):
    """``ray.get(ref)``; on a task error cancel the tasks in ``cancel`` (finished chunks are on
    disk for ``--resume``) and raise bad input as the driver's own one-line error."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as err:
        for other in cancel:
            with contextlib.suppress(Exception):
                ray.cancel(other, force=True)
        raise _unwrap(ray, err) from None


def run_stage1(ray, settings, chunks, path: Path) -> dict[int, list[dict]]:
    """Stage 1 of every unfinished chunk, one Ray task each; each result is appended on arrival."""
    from tqdm import tqdm

    from projection.pipeline import append_chunk, read_chunks

    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    # --threads is the CPUs a task's searcher uses; never more than a node has (else it never runs)
    task = ray.remote(num_cpus=min(settings.threads, _largest_node_cpus(ray)), max_retries=2)(_stage1_chunk)
    settings_ref = ray.put(settings)
    pending = {task.remote(settings_ref, chunks[i]): i for i in todo}

    with tqdm(total=len(pending), desc="stage 1 on Ray (BM25 + answer match)", unit="chunk") as bar:
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(ref)
            records = _result(ray, ref, pending)
            append_chunk(path, i, records)
            done[i] = records
            bar.update(1)
    return done


def run_stage2(ray, settings, chunks, stage1_done, path: Path, workers: int | None = None) -> dict[int, list[dict]]:
    """Stage 2 of every unfinished chunk on a pool of verifier actors (each loads its model once)."""
    from tqdm import tqdm

    from projection.pipeline import append_chunk, read_chunks
    from projection.pipeline import run_stage2 as local_stage2

    if settings.verifier == "none":  # nothing to judge: the single-machine code does it in the driver
        return local_stage2(settings, chunks, stage1_done, path)
    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    resources = _verifier_resources(settings)
    if resources.get("num_gpus"):
        fits = int(ray.cluster_resources().get("GPU", 0))
        if fits < 1:
            raise NanoKnowInputError("the Ray cluster has no GPU for the verifier", field="--device")
    else:
        resources["num_cpus"] = min(resources["num_cpus"], _largest_node_cpus(ray))
        fits = int(ray.cluster_resources().get("CPU", 1)) // resources["num_cpus"]
    size = max(1, min(workers or fits, fits, len(todo)))
    actor_class = ray.remote(max_concurrency=1, max_restarts=1, max_task_retries=1, **resources)(_Verifier)
    actors = [actor_class.remote(settings) for _ in range(size)]
    log.info("stage 2 on Ray: %d verifier(s), %s each", size, resources)
    try:
        for ref in [a.ready.remote() for a in actors]:
            _result(ray, ref)
        queue = list(todo)
        pending: dict = {}  # object ref -> the actor judging that chunk

        def submit(actor):  # each actor holds one chunk at a time; the next goes to whoever is free
            if queue:
                i = queue.pop(0)
                pending[actor.verify.remote(i, chunks[i], stage1_done[i])] = actor

        for actor in actors:
            submit(actor)
        with tqdm(total=len(todo), desc="stage 2 on Ray (LLM verification)", unit="chunk") as bar:
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                actor = pending.pop(ref)
                i, rows = _result(ray, ref)  # on an error the actors are killed below
                append_chunk(path, i, rows)
                done[i] = rows
                bar.update(1)
                submit(actor)
        with contextlib.suppress(ray.exceptions.RayError):  # let backends close cleanly (vLLM, HTTP pools)
            ray.get([a.close.remote() for a in actors], timeout=60)
    finally:
        for actor in actors:
            ray.kill(actor)
    return done


def check_settings(settings) -> None:
    """Refuse a run that cannot start on Ray (no Ray installed, bad counts), before any file is written."""
    _import_ray()
    for flag in ("ray_cpus", "ray_verifiers"):
        if getattr(settings, flag) is not None and getattr(settings, flag) < 1:
            raise NanoKnowInputError("must be at least 1", field="--" + flag.replace("_", "-"))


def run_stages(settings, chunks, work: Path):
    """Both stages on Ray (``settings.ray_address``); returns ``(stage1_done, stage2_done)`` keyed by chunk."""
    from projection import pipeline

    check_settings(settings)
    stage1_path, stage2_path = work / "stage1.jsonl", work / "stage2.jsonl"
    if len(pipeline.read_chunks(stage1_path)) == len(chunks) and (
            settings.verifier == "none" or len(pipeline.read_chunks(stage2_path)) == len(chunks)):
        log.info("every chunk is already done: writing the final files without starting Ray")
        s1 = pipeline.read_chunks(stage1_path)
        return s1, pipeline.run_stage2(settings, chunks, s1, stage2_path)
    with connect(settings.ray_address, settings.ray_cpus) as ray:
        s1 = run_stage1(ray, settings, chunks, stage1_path)
        s2 = run_stage2(ray, settings, chunks, s1, stage2_path, workers=settings.ray_verifiers)
    return s1, s2
