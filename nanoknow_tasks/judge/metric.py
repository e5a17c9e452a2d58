"""The ``llm_judge`` metric: a judge model decides whether each prediction answers the question.

How the pieces meet inside lm-eval:

1. Configuration. lm-eval hands ``--metadata`` only to a task's ``custom_dataset`` loader, so
   every NanoKnow loader calls :func:`configure_from_metadata` with the metadata it received.
   It sets one process-wide :class:`JudgeConfig` (or none) from the ``judge_*`` keys, with
   ``NANOKNOW_JUDGE_*`` environment variables as defaults. Without any judge setting it only
   scans the keys (cheap) and the tasks report ``has_answer`` alone. A key-like setting
   (``judge_api_key``, ``*token*``...) is refused: lm-eval writes metadata into its results
   (:mod:`.credentials`). The loaders then call :func:`ensure_judge_answers`, which checks once
   per process, before any generation, that the judge answers.
2. Per sample. ``scoring.process_results`` calls :func:`judge_metrics`, which returns, when a
   judge is configured, the item ``{question, answers, prediction, judge_model, judge_key}``
   under ``llm_judge`` and ``llm_judge_unparseable`` (nothing is judged yet). The item is what
   ``--log_samples`` stores for those keys.
3. Per task. lm-eval passes the list of items to each metric's aggregation:
   :func:`aggregate_accuracy` (``llm_judge``: share judged correct, unparseable outputs count
   as not correct) and :func:`aggregate_unparseable` (``llm_judge_unparseable``: how many
   outputs had no valid JSON verdict). Both go through :func:`judge_items`: cached outputs are
   read from disk, all the rest is judged in one batched ``generate`` call and cached.

Settings (``--metadata`` key / environment variable):

* ``judge_backend`` / ``NANOKNOW_JUDGE_BACKEND``: ``hf``, ``openai`` or ``vllm`` (the
  projection's backends, :mod:`nanoknow_common.llm`); ``none`` switches the judge off;
* ``judge_model`` / ``NANOKNOW_JUDGE_MODEL``: model id, folder, or served model name;
* ``judge_base_url`` / ``NANOKNOW_JUDGE_BASE_URL``: for ``openai`` (``OPENAI_BASE_URL`` also
  works); its key only from the environment: ``NANOKNOW_JUDGE_API_KEY`` or ``OPENAI_API_KEY``;
* ``judge_max_new_tokens`` / ``NANOKNOW_JUDGE_MAX_NEW_TOKENS``: generation budget (256);
* ``judge_options`` / ``NANOKNOW_JUDGE_OPTIONS`` (JSON object): more backend options, e.g.
  ``{"gguf_file": "...", "batch_size": 4}`` for ``hf`` or ``{"concurrency": 32}``;
* ``judge_cache`` / ``NANOKNOW_JUDGE_CACHE``: the SQLite cache file, or ``off`` (memory only).

Reports read per-sample verdicts back with :func:`sample_verdicts` (from the cache, no model).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

from nanoknow_tasks.judge.cache import JudgeCache, cache_key, default_cache_path
from nanoknow_tasks.judge.credentials import refuse_credentials
from nanoknow_tasks.judge.prompt import Judgement, answer_judge_messages, parse_judgement
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

ENV_PREFIX = "NANOKNOW_JUDGE_"
SETTINGS = ("judge_backend", "judge_model", "judge_base_url", "judge_api_key", "judge_max_new_tokens",
            "judge_options", "judge_cache")
BACKENDS = ("hf", "openai", "vllm")
OFF = ("none", "off", "false", "0")
DEFAULT_MAX_NEW_TOKENS = 256
METRIC, UNPARSEABLE_METRIC = "llm_judge", "llm_judge_unparseable"


@dataclass(frozen=True)
class JudgeConfig:
    """Which judge to ask and where its answers are cached."""

    backend: str
    model: str
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    cache_path: str | None = None  # None: in-memory only
    options: str = "{}"            # JSON of the backend options (kept hashable)
    secrets: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def backend_options(self) -> dict:
        """Keyword options for :func:`nanoknow_common.llm.make_backend`."""
        return {**json.loads(self.options), **self.secrets}


_config: JudgeConfig | None = None
_backends: dict[JudgeConfig, object] = {}
_caches: dict[str | None, JudgeCache] = {}


def _collect(metadata: dict | None) -> dict:
    """``judge_*`` settings: environment first, ``metadata`` overriding it."""
    settings = {}
    for name, value in os.environ.items():
        if name.startswith(ENV_PREFIX) and value != "":
            settings["judge_" + name[len(ENV_PREFIX):].lower()] = value
    for name, value in (metadata or {}).items():
        if isinstance(name, str) and name.startswith("judge_") and value is not None:
            settings[name] = value
    return settings


def _int_setting(settings: dict, name: str, default: int) -> int:
    value = settings.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number <= 0 or isinstance(value, bool):
        raise NanoKnowInputError(f"must be a positive integer, got {value!r}", field=name)
    return number


def _options_setting(settings: dict) -> dict:
    value = settings.get("judge_options", {})
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise NanoKnowInputError(f"must be a JSON object: {err}", field="judge_options") from err
    if not isinstance(value, dict):
        raise NanoKnowInputError(f"must be a JSON object, got {value!r}", field="judge_options")
    return value


def _build_config(settings: dict) -> JudgeConfig | None:
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise NanoKnowInputError(f"unknown judge setting; known: {', '.join(SETTINGS)}", field=unknown[0])
    if not set(settings) - {"judge_cache"}:
        return None  # only a cache location: no judge requested
    backend = str(settings.get("judge_backend") or "").strip().lower()
    if backend in OFF and "judge_backend" in settings:
        return None
    given = ", ".join(sorted(settings))
    if not backend:
        raise NanoKnowInputError(f"judge settings given ({given}) but no backend; set judge_backend "
                                 f"(or ${ENV_PREFIX}BACKEND) to one of {', '.join(BACKENDS)}",
                                 field="judge_backend")
    if backend not in BACKENDS:
        raise NanoKnowInputError(f"unknown judge backend {backend!r}; choose one of {', '.join(BACKENDS)}",
                                 field="judge_backend")
    model = str(settings.get("judge_model") or "").strip()
    if not model:
        raise NanoKnowInputError(f"the {backend} judge needs a model (e.g. Qwen/Qwen3-14B)", field="judge_model")
    options = _options_setting(settings)
    refuse_credentials(options, within="judge_options")
    secrets = {}
    if backend == "openai":
        base_url = settings.get("judge_base_url") or options.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise NanoKnowInputError("the openai judge needs a server URL, e.g. http://127.0.0.1:8000/v1",
                                     field="judge_base_url")
        options["base_url"] = str(base_url)
        if settings.get("judge_api_key"):  # from $NANOKNOW_JUDGE_API_KEY only (metadata keys are refused)
            secrets["api_key"] = str(settings["judge_api_key"])
    elif settings.get("judge_base_url"):
        raise NanoKnowInputError(f"only the openai judge backend takes a URL, not {backend}", field="judge_base_url")
    cache = settings.get("judge_cache")
    if cache is None or cache == "":
        cache_path = str(default_cache_path())
    elif str(cache).strip().lower() in OFF + ("memory",):
        cache_path = None
    else:
        cache_path = os.path.expanduser(str(cache))
    return JudgeConfig(backend=backend, model=model,
                       max_new_tokens=_int_setting(settings, "judge_max_new_tokens", DEFAULT_MAX_NEW_TOKENS),
                       cache_path=cache_path, options=json.dumps(options, sort_keys=True), secrets=secrets)


def configure_from_metadata(metadata: dict | None) -> JudgeConfig | None:
    """Set the process-wide judge from lm-eval metadata (``judge_*`` keys) and the environment.

    Loaders call it with the keyword arguments lm-eval gave them beyond their own (task
    metadata, ``--metadata`` JSON, ``--model_args``). Returns the configuration, or None when
    no judge is asked for (then the tasks report only ``has_answer``). Raises
    :class:`NanoKnowInputError` naming the setting when a judge is asked for incompletely
    (a model without a backend, an unknown backend, an openai backend without URL...) or
    when a setting looks like a credential (those come from the environment only).
    """
    global _config
    refuse_credentials(metadata)
    _config = _build_config(_collect(metadata))
    if _config is not None:
        log.info("LLM judge: %s model %s (cache %s)", _config.backend, _config.model, _config.cache_path or "memory")
    return _config


def configure(**settings) -> JudgeConfig | None:
    """Python form of :func:`configure_from_metadata`: ``configure(judge_backend="openai", ...)``."""
    return configure_from_metadata(settings)


def current_config() -> JudgeConfig | None:
    """The judge configured in this process, if any."""
    return _config


def _cache(config_path: str | None) -> JudgeCache:
    if config_path not in _caches:
        _caches[config_path] = JudgeCache(config_path)
    return _caches[config_path]


def _backend(config: JudgeConfig):
    if config not in _backends:
        from nanoknow_common.llm import make_backend

        log.info("loading the %s judge %s", config.backend, config.model)
        _backends[config] = make_backend(config.backend, config.model, **config.backend_options())
    return _backends[config]


_answering: set[JudgeConfig] = set()
#: The test request of :func:`ensure_judge_answers` (short: any answer will do).
PROBE = [{"role": "user", "content": "Reply with the word OK."}]


def ensure_judge_answers(config: JudgeConfig | None = None) -> None:
    """Check, once per process and judge, that the judge answers, before lm-eval generates.

    ``openai``: one tiny request (one retry, 60 s timeout); ``hf``/``vllm``: the model loads
    (and stays loaded for the aggregation). Raises :class:`NanoKnowInputError` naming the URL
    or model: an unreachable judge found only after every generation would lose the work.
    """
    from nanoknow_common.llm import LLMBackendError

    config = config or _config
    if config is None or config in _answering:
        return
    options = config.backend_options()
    where = f"at {options['base_url']} " if config.backend == "openai" else ""
    log.info("LLM judge: checking that the %s judge %s %sanswers", config.backend, config.model, where)
    try:
        if config.backend == "openai":
            from nanoknow_common.llm.openai_backend import OpenAIBackend

            probe = OpenAIBackend(config.model, **{**options, "max_retries": 1, "timeout": 60.0, "progress": False})
            try:
                probe.complete(PROBE, max_new_tokens=8)
            finally:
                probe.close()
        else:
            _backend(config)
    except (LLMBackendError, OSError, ValueError) as err:
        fix = "start the server or fix judge_base_url" if config.backend == "openai" else "fix judge_model"
        raise NanoKnowInputError(f"the {config.backend} judge {config.model!r} {where}did not answer before "
                                 f"generation started ({err}); {fix}, or pass judge_backend=none",
                                 field="judge_base_url" if config.backend == "openai" else "judge_model") from err
    _answering.add(config)


def make_item(question: str, answers: list[str], prediction: str, config: JudgeConfig) -> dict:
    """The per-sample record that ``llm_judge`` aggregates (and ``--log_samples`` keeps)."""
    answers = [str(a) for a in answers]
    messages = answer_judge_messages(question, answers, prediction)
    return {"question": question, "answers": answers, "prediction": prediction,
            "judge_model": config.model, "judge_key": cache_key(config.model, messages, config.max_new_tokens)}


def judge_metrics(doc: dict, prediction: str) -> dict:
    """``{llm_judge: item, llm_judge_unparseable: item}`` when a judge is configured, else ``{}``."""
    if _config is None:
        return {}
    item = make_item(doc["question"], list(doc["answers"]), prediction, _config)
    return {METRIC: item, UNPARSEABLE_METRIC: item}


def judge_items(items: list[dict], config: JudgeConfig | None = None) -> list[Judgement]:
    """Judge every item, in order: cached outputs first, the rest in one batched call."""
    config = config or _config
    if config is None:
        raise NanoKnowInputError("llm_judge items to score but no judge is configured", field="judge_backend")
    others = {i.get("judge_model") for i in items} - {config.model}
    if others:
        raise NanoKnowInputError(f"items were made for judge {sorted(others)}, not {config.model}",
                                 field="judge_model")
    cache = _cache(config.cache_path)
    keys = [i["judge_key"] for i in items]
    outputs = cache.get_many(keys)
    missing = {}
    for item in items:
        if item["judge_key"] not in outputs and item["judge_key"] not in missing:
            missing[item["judge_key"]] = answer_judge_messages(item["question"], item["answers"], item["prediction"])
    log.info("LLM judge: %d items, %d cached, %d distinct prompts to judge",
             len(items), sum(k in outputs for k in keys), len(missing))
    if missing:
        new = _backend(config).generate(list(missing.values()), max_new_tokens=config.max_new_tokens,
                                        temperature=0.0)
        rows = [(k, config.model, msgs, out) for (k, msgs), out in zip(missing.items(), new)]
        cache.put_many(rows)
        outputs.update({k: out for k, _, _, out in rows})
    judgements = [parse_judgement(outputs[k]) for k in keys]
    bad = sum(not j.parsed for j in judgements)
    if bad:
        log.warning("LLM judge: %d of %d outputs had no valid JSON verdict (reported as %s)",
                    bad, len(judgements), UNPARSEABLE_METRIC)
    return judgements


def aggregate_accuracy(items: list[dict]) -> float:
    """``llm_judge``: share of items judged correct (unparseable ones count as not correct)."""
    judgements = judge_items(list(items))
    return sum(j.correct is True for j in judgements) / len(judgements) if judgements else float("nan")


def aggregate_unparseable(items: list[dict]) -> int:
    """``llm_judge_unparseable``: how many judge outputs held no valid JSON verdict."""
    return sum(not j.parsed for j in judge_items(list(items)))


def sample_verdicts(samples: list[dict], cache_path: str | None = None) -> list[Judgement | None]:
    """Per-sample verdicts for lm-eval logged samples (``samples_<task>_*.jsonl`` rows), in order.

    Reads the ``llm_judge`` item of each sample and looks its output up in the judge cache
    (``cache_path``, else the configured one, else ``$NANOKNOW_JUDGE_CACHE`` or the default);
    no model is loaded. ``None`` for a sample without an item or whose output is not cached.
    """
    if cache_path is None:
        if _config is not None and _config.cache_path:
            cache_path = _config.cache_path
        else:
            env = os.environ.get(ENV_PREFIX + "CACHE", "")
            cache_path = env if env and env.lower() not in OFF + ("memory",) else str(default_cache_path())
    keys = [s[METRIC].get("judge_key") if isinstance(s.get(METRIC), dict) else None for s in samples]
    found = JudgeCache(cache_path).get_many([k for k in keys if k]) if os.path.isfile(cache_path) else {}
    return [parse_judgement(found[k]) if k in found else None for k in keys]
