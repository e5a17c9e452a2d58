"""Make plain ``lm_eval`` 0.4.x see the NanoKnow tasks and the ``nanochat`` model.

Newer lm-eval releases discover plugins through entry points, which ``pyproject.toml``
declares (``lm_eval.models``: ``nanochat``; ``lm_eval.tasks``: this folder). lm-eval 0.4.x
reads none: its ``TaskManager`` scans its own ``lm_eval/tasks`` folder (plus
``--include_path``) and ``lm_eval.models`` holds a fixed table of model names. For 0.4.x
only (:func:`hook_applies`), this module bridges that gap without costing anything at
interpreter start and without touching lm-eval's files:

* ``nanoknow_lm_eval.pth`` (installed into site-packages) calls :func:`install`, which only
  appends one finder to ``sys.meta_path``; nothing from lm-eval, torch or this project is
  imported then.
* When (and only when) a process imports ``lm_eval.models`` or the module that defines
  ``TaskManager``, the finder lets the normal loader run and afterwards registers the lazy
  model entry ``nanochat`` and adds this folder to every ``TaskManager``'s search path
  (deduplicated, so ``--include_path nanoknow_tasks`` still works).

Only public lm-eval API is used (``model_registry.register(name, target=...)`` and the
``include_path`` argument of ``TaskManager``). To switch the bridge off set
``NANOKNOW_LM_EVAL_HOOK=0``; ``pip uninstall nanoknow`` removes it completely.
"""

from __future__ import annotations

import os
import sys

# Only modules that the interpreter has loaded anyway at start-up are imported at the top:
# this module is imported by a .pth file in every Python process of the environment.

#: lm-eval model names this project provides, as lazy ``module:object`` targets.
MODELS = {"nanochat": "nanochat_adapter.lm_eval_model:NanoChatLM"}

#: The folder that holds the task YAML files (this package's own folder).
TASKS_DIR = os.path.dirname(os.path.realpath(__file__))

_TASK_MANAGER_MODULES = ("lm_eval.tasks.manager", "lm_eval.tasks")
#: The lm-eval series that read no entry points and need this hook.
HOOKED_SERIES = "0.4."


def hook_applies(lm_eval_version: str | None = None) -> bool:
    """Whether the installed lm-eval (or ``lm_eval_version``) is a 0.4.x release, which needs the hook."""
    if lm_eval_version is None:
        import lm_eval  # already being imported when a callback runs

        lm_eval_version = getattr(lm_eval, "__version__", "")
    return lm_eval_version.startswith(HOOKED_SERIES)
_PATCHED_FLAG = "_nanoknow_include_path_patched"


def register_models(models_module=None) -> None:
    """Register :data:`MODELS` in lm-eval's model registry (idempotent; 0.4.x only)."""
    if not hook_applies():
        return
    from lm_eval.api.registry import model_registry

    for name, target in MODELS.items():
        if name not in model_registry:
            model_registry.register(name, target=target)


def _same_folder(a, b) -> bool:
    return os.path.realpath(os.fspath(a)) == os.path.realpath(os.fspath(b))


def _with_nanoknow_tasks(include_path):
    """Return ``include_path`` extended by :data:`TASKS_DIR` unless it already has it."""
    if include_path is None:
        paths = []
    elif isinstance(include_path, (list, tuple)):
        paths = list(include_path)
    else:
        paths = [include_path]
    if any(_same_folder(p, TASKS_DIR) for p in paths):
        return include_path
    return paths + [TASKS_DIR]


def patch_task_manager(module) -> None:
    """Wrap ``TaskManager.__init__`` in ``module`` so that it also scans the NanoKnow tasks."""
    import functools
    import inspect

    cls = getattr(module, "TaskManager", None)
    if cls is None or getattr(cls, _PATCHED_FLAG, False) or not hook_applies():
        return
    original_init = cls.__init__
    signature = inspect.signature(original_init)
    if "include_path" not in signature.parameters:  # an lm-eval we do not know: stay out
        return

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if bound.arguments.get("include_defaults", True):
            bound.arguments["include_path"] = _with_nanoknow_tasks(bound.arguments["include_path"])
        original_init(*bound.args, **bound.kwargs)

    cls.__init__ = __init__
    setattr(cls, _PATCHED_FLAG, True)


_AFTER_IMPORT = {
    "lm_eval.models": register_models,
    **{name: patch_task_manager for name in _TASK_MANAGER_MODULES},
}


class _RunAfterLoader:
    """Delegates to the real loader, then runs a callback on the fresh module."""

    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name):  # resource readers, get_source, ...
        return getattr(self._loader, name)


class _LmEvalFinder:
    """Finds nothing itself; decorates the spec of a few lm-eval modules."""

    def find_spec(self, fullname, path, target=None):
        callback = _AFTER_IMPORT.get(fullname)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _RunAfterLoader(spec.loader, callback)
        return spec


def install() -> None:
    """Add the import hook once; apply it at once to lm-eval modules already imported."""
    if any(isinstance(f, _LmEvalFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _LmEvalFinder())
    for name, callback in _AFTER_IMPORT.items():
        module = sys.modules.get(name)
        if module is not None:
            callback(module)
