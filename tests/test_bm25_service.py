"""BM25 as a service, with real processes on 127.0.0.1 only.

A real ``nanoknow serve-index`` child serves a real index built by ``nanoknow index`` on the
sample corpus (one server per session: the JVM start is slow); ``nanoknow project --retriever
rest`` against it must write the same bytes as the local retriever. Auth, bad requests, a
scripted server for 429/503 retries (a small ``http.server`` in this process), a server killed
mid-run and restarted, and unreachable URLs are checked against the same components.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from projection.data import layout
from tests.conftest import VENV_BIN, run_command
from tests.openai_test_server import FakeOpenAIServer

DATASET, CORPUS_NAME, INDEX_NAME = "sample", "sample-corpus", "sample"
#: A fresh token per session: finding it in a file means it leaked.
TOKEN = "nk-test-" + secrets.token_urlsafe(24)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeIndex:
    """A ``nanoknow serve-index`` child process on 127.0.0.1 (started at once, waited for on use)."""

    def __init__(self, log_path: Path, *args: str, token: str | None = None, port: int | None = None):
        self.args, self.log_path, self.token = args, log_path, token
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self, args: list[str] | None = None) -> None:
        """(Re)start the child, on the same port, with new arguments if given."""
        self.args = tuple(args) if args is not None else self.args
        env = {k: v for k, v in os.environ.items() if k != "NANOKNOW_INDEX_TOKEN"}
        if self.token:
            env["NANOKNOW_INDEX_TOKEN"] = self.token
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen([str(VENV_BIN / "nanoknow"), "serve-index", *self.args, "--port",
                                          str(self.port)], env=env, stdout=log, stderr=log)
        self.ready = False

    @property
    def url(self) -> str:
        """The base URL, once ``/health`` answers (the JVM start takes a while)."""
        deadline = time.monotonic() + 240
        while not self.ready:
            assert self.proc.poll() is None, f"serve-index exited {self.proc.returncode}:\n{self.log()[-3000:]}"
            assert time.monotonic() < deadline, "serve-index did not answer /health in 240 s"
            try:
                self.ready = requests.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200
            except requests.RequestException:
                time.sleep(0.2)
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The embedded sample corpus, an index that stores raw documents, and a 300-question file."""
    root = tmp_path_factory.mktemp("bm25-service")
    corpus, index = root / "corpus", root / "index"
    run_command(["nanoknow", "make-sample-corpus", "--out", str(corpus), "--embedded"])
    run_command(["nanoknow", "index", "--corpus", str(corpus), "--index", str(index), "--threads", "2",
                 "--store-raw"])
    questions = [json.loads(line) for line in open(corpus / "questions.jsonl")]
    many = root / "questions-x3.jsonl"
    many.write_text("".join(json.dumps({**q, "qid": f"{r}-{q['qid']}"}) + "\n" for r in range(3) for q in questions))
    return {"root": root, "corpus": corpus, "index": index, "questions": corpus / "questions.jsonl",
            "many": many}


@pytest.fixture(scope="session")
def server(built):
    """The shared service: texts from the raw-storing index, a token required (the kill test
    restarts it reading texts from the corpus)."""
    srv = ServeIndex(built["root"] / "serve-index.log", "--index", str(built["index"]), "--name", INDEX_NAME,
                     token=TOKEN)
    yield srv
    srv.stop()


def project_args(questions: Path, out: Path, *extra: str) -> list[str]:
    return ["nanoknow", "project", "--questions", str(questions), "--dataset", DATASET, "--corpus-name",
            CORPUS_NAME, "--out", str(out), "--threads", "2", *extra]


def rest_args(url: str, *extra: str) -> list[str]:
    return ["--retriever", "rest", "--rest-url", url, "--rest-index", INDEX_NAME, *extra]


def all_files(out: Path) -> dict[str, bytes]:
    """Every file a projection wrote, work files included."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(Path(out).rglob("*")) if p.is_file()}


def judge_reply(messages) -> str:
    """A deterministic judge: the verdict is a function of the prompt (hence of the passage)."""
    if zlib.crc32(messages[-1]["content"].encode()) % 3 == 0:
        return "COINCIDENTAL: another sense"
    return "TRUE: stated"


def test_rest_projection_is_byte_identical_to_the_local_index(built, server):
    local, rest = built["root"] / "local", built["root"] / "rest"
    with FakeOpenAIServer(reply=judge_reply) as judge:
        verify = ["--verifier", "openai", "--model", "judge", "--base-url", judge.base_url, "--chunk-size", "30"]
        run_command(project_args(built["questions"], local, "--index", str(built["index"]), "--corpus",
                                 str(built["corpus"]), *verify))
        run_command(project_args(built["questions"], rest, *rest_args(server.url), *verify),
                    env={"PYSERINI_API_TOKEN": TOKEN})
    local_files, rest_files = all_files(local), all_files(rest)
    work = f"{DATASET}/{CORPUS_NAME}/.projection/"
    assert {work + "stage1.jsonl", work + "stage2.jsonl", work + "run.json"} <= set(rest_files)
    assert rest_files == local_files  # work files (hits, scores, offsets, windows, verdicts) and final files
    stage1 = [json.loads(line) for line in rest_files[work + "stage1.jsonl"].splitlines()]
    assert sum(len(q["candidates"]) for c in stage1 for q in c["questions"]) > 200
    qrels = layout.qrels_path(rest, DATASET, CORPUS_NAME).read_text().splitlines()
    assert 100 < len(qrels) < 252  # the judge kept some candidates and dropped others
    for name, data in rest_files.items():
        assert TOKEN.encode() not in data, f"the token leaked into {name}"
    assert TOKEN not in server.log()
    # with --corpus the client reads texts from its own parquet copy: the same stage 1
    own_texts = built["root"] / "rest-own-corpus"
    run_command(project_args(built["questions"], own_texts, *rest_args(server.url), "--corpus", str(built["corpus"]),
                             "--verifier", "none", "--chunk-size", "30"), env={"PYSERINI_API_TOKEN": TOKEN})
    assert (own_texts / work / "stage1.jsonl").read_bytes() == local_files[work + "stage1.jsonl"]


def test_token_is_required_and_the_client_names_its_variable(built, server, tmp_path):
    search = f"{server.url}/v1/{INDEX_NAME}/search"
    params = {"query": "capital of France", "hits": 3}
    assert requests.get(f"{server.url}/health", timeout=10).json() == {"status": "ok"}  # open to load balancers
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
        answer = requests.get(search, params=params, headers=headers, timeout=10)
        assert answer.status_code == 401 and "token" in answer.json()["error"]
        assert answer.headers["WWW-Authenticate"] == "Bearer"
    answer = requests.get(search, params=params, headers={"Authorization": f"bearer {TOKEN}"}, timeout=10)
    assert answer.status_code == 200 and len(answer.json()["candidates"]) == 3

    cases = [({"PYSERINI_API_TOKEN": ""}, [], "PYSERINI_API_TOKEN", "wants a bearer token"),
             ({"MY_INDEX_TOKEN": "not-" + TOKEN}, ["--rest-token-env", "MY_INDEX_TOKEN"], "MY_INDEX_TOKEN",
              "was refused")]
    for env, extra, variable, reason in cases:
        out = tmp_path / variable
        proc = run_command(project_args(built["questions"], out, *rest_args(server.url, *extra), "--verifier", "none"),
                           env=env, check=False, timeout=120)
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-2000:]
        assert errors[0].startswith("nanoknow project: error: --rest-token-env:")
        assert variable in errors[0] and reason in errors[0] and "401" in errors[0] and server.url in errors[0]
        assert TOKEN not in proc.stderr + proc.stdout
        assert not layout.qrels_path(out, DATASET, CORPUS_NAME).exists()


def test_bad_requests_get_a_clear_4xx_and_the_server_keeps_serving(built, server, tmp_path):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    base = f"{server.url}/v1/{INDEX_NAME}"
    bad = [(f"{base}/search", {"query": "capital", "hits": 100000}, 400, "hits must be between 1 and 1000"),
           (f"{base}/search", {"query": "word " * 2000, "hits": 10}, 400, "the limit is 2000"),
           (f"{base}/search", {"query": "capital", "hits": "ten"}, 400, "hits"),
           (f"{base}/search", {"hits": 10}, 400, "query"),
           (f"{base}/search", {"query": "   "}, 400, "empty"),
           (f"{server.url}/v1/..%2F..%2Fetc/search", {"query": "x"}, 404, ""),
           (f"{server.url}/v1/../search", {"query": "x"}, 404, ""),
           (f"{server.url}/v1/..%2Findex/doc/shard_00000_1", {}, 404, ""),
           (f"{server.url}/v1/other-index/search", {"query": "x"}, 404, "unknown index 'other-index'"),
           (f"{base}/doc/shard_99999_1", {}, 404, "is not in index"),
           (f"{base}/doc/..%2F..%2Fetc%2Fpasswd", {}, 404, "is not in index")]
    for url, params, status, reason in bad:
        answer = session.get(url, params=params, timeout=30)
        assert answer.status_code == status, (url, answer.text)
        assert reason in answer.json()["error"], (url, answer.text)
        # and it still serves
        ok = session.get(f"{base}/search", params={"query": "capital of France", "hits": 5}, timeout=30)
        assert ok.status_code == 200 and len(ok.json()["candidates"]) == 5
    from projection.corpus.shards import Corpus

    doc = session.get(f"{base}/doc/shard_00000_1", timeout=30).json()["doc"]
    assert doc["contents"] == Corpus(built["corpus"]).read_document("shard_00000_1")
    # one line per request, with its status, and never the token
    lines = [line for line in server.log().splitlines() if " GET /" in line]
    assert any(" 400 " in line for line in lines) and any(" 404 " in line for line in lines)
    assert len(lines) >= 2 * len(bad) + 1 and TOKEN not in server.log()
    # the client turns a refusal into a one-line error: --top-k above the service's cap
    proc = run_command(project_args(built["questions"], tmp_path / "o", *rest_args(server.url), "--top-k", "5000",
                                    "--verifier", "none"), env={"PYSERINI_API_TOKEN": TOKEN}, check=False, timeout=120)
    assert proc.returncode == 2 and "HTTP 400" in proc.stderr and "hits must be between 1 and 1000" in proc.stderr


class ScriptedIndex:
    """A BM25 service on 127.0.0.1 whose failures are scripted: ``faults[kind]`` lists the
    (status, headers) to answer before answering normally; kind is "search" or "doc"."""

    CANDIDATES = [{"docid": "d1", "score": 7.5, "doc": {"id": "d1", "contents": "Paris is the capital of France."}},
                  {"docid": "d2", "score": 3.25},  # no text: the client fetches /doc/d2
                  {"docid": "d3", "score": 1.0, "doc": json.dumps({"id": "d3", "contents": "Lyon is big."})}]
    DOCS = {"d2": {"id": "d2", "contents": "The Louvre in Paris opened in 1793."}}

    def __init__(self, faults: dict[str, list]):
        self.faults = {k: list(v) for k, v in faults.items()}
        self.seen: list[tuple[str, str | None]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server API
                kind = "doc" if "/doc/" in self.path else "search"
                owner.seen.append((self.path, self.headers.get("Authorization")))
                if owner.faults.get(kind):
                    status, headers = owner.faults[kind].pop(0)
                    return self._send(status, {"error": f"scripted {status}"}, headers)
                if kind == "doc":
                    return self._send(200, {"doc": owner.DOCS[self.path.rsplit("/", 1)[1]]})
                self._send(200, {"candidates": owner.CANDIDATES})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_retries_honour_retry_after_on_429_and_survive_503s(monkeypatch):
    from nanoknow_common.errors import NanoKnowInputError
    from projection.stage1.retrieval import Question, stage1
    from projection.stage1.rest_search import RestSearcher, RestSettings, RestTexts

    monkeypatch.setenv("PYSERINI_API_TOKEN", TOKEN)
    faults = {"search": [(429, {"Retry-After": "1"})], "doc": [(503, {}), (503, {})]}
    with ScriptedIndex(faults) as scripted:
        settings = RestSettings(url=scripted.url, index="scripted", retries=3, backoff=0.05, timeout=10)
        with RestSearcher(settings, progress=False) as searcher:
            start = time.monotonic()
            records = stage1(searcher, RestTexts(searcher), [Question("q1", "capital of France", ["Paris"])], k=3)
            elapsed = time.monotonic() - start
            assert searcher.retried == 3
    assert 1.0 <= elapsed < 8  # waited the second Retry-After asked for, not the 0.05 s backoff
    [record] = records
    assert record["qid"] == "q1" and record["hits"] == 3
    ranked = [(c["doc_id"], c["rank"], c["bm25_score"]) for c in record["candidates"]]
    assert ranked == [("d1", 1, 7.5), ("d2", 2, 3.25)]
    assert record["candidates"][1]["passage"] == "The Louvre in Paris opened in 1793."
    paths = [path for path, _ in scripted.seen]
    assert sum("/search?" in p for p in paths) == 2 and paths.count("/v1/scripted/doc/d2") == 3
    assert {auth for _, auth in scripted.seen} == {f"Bearer {TOKEN}"}
    # retries are bounded: a service that keeps failing gives a clear error naming it
    with ScriptedIndex({"search": [(503, {})] * 10}) as scripted:
        settings = RestSettings(url=scripted.url, index="scripted", retries=2, backoff=0.01, timeout=10)
        with RestSearcher(settings, progress=False) as searcher:
            with pytest.raises(NanoKnowInputError, match="failed after 3 attempts; last error: HTTP 503") as err:
                searcher.batch_search(["q"], ["1"], k=3)
    assert scripted.url in str(err.value) and len(scripted.seen) == 3


def test_a_server_killed_mid_run_leaves_resumable_state(built, server):
    """The session's server is killed mid-run and comes back on the same port, reading texts
    from the parquet corpus this time: the resumed run gives the same bytes as an unbroken one."""
    reference, out = built["root"] / "unbroken", built["root"] / "killed"
    chunking = ["--chunk-size", "3", "--verifier", "none"]
    token = {"PYSERINI_API_TOKEN": TOKEN}
    run_command(project_args(built["many"], reference, *rest_args(server.url), *chunking), env=token)
    args = project_args(built["many"], out, *rest_args(server.url, "--concurrency", "1", "--rest-retries", "1",
                                                       "--rest-timeout", "5"), *chunking)
    proc = subprocess.Popen([str(VENV_BIN / "nanoknow"), *args[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **token})
    try:
        stage1 = out / DATASET / CORPUS_NAME / ".projection" / "stage1.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if stage1.exists() and stage1.read_bytes().count(b"\n") >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before the server could be killed"
        server.stop(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.start(["--index", str(built["index"]), "--name", INDEX_NAME, "--corpus", str(built["corpus"])])
    assert proc.returncode == 2 and server.url in stderr.splitlines()[-1], stderr[-2000:]
    done = stage1.read_bytes().count(b"\n")
    assert 2 <= done < 100 and not layout.qrels_path(out, DATASET, CORPUS_NAME).exists()
    run_command([*project_args(built["many"], out, *rest_args(server.url, "--concurrency", "1"), *chunking),
                 "--resume"], env=token)
    assert all_files(out) == all_files(reference)
    assert "texts from corpus" in server.log()


def test_unreachable_urls_fail_within_the_timeout_naming_the_url(built, tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    proc = run_command(project_args(built["questions"], tmp_path / "a", *rest_args(closed), "--verifier", "none"),
                       check=False, timeout=120)
    assert proc.returncode == 2 and f"cannot reach {closed}: [Errno 111] Connection refused" in proc.stderr
    assert time.monotonic() - start < 60  # the process start included; no retry on a refused connection
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        proc = run_command(project_args(built["questions"], tmp_path / "b", *rest_args(url, "--rest-timeout", "2"),
                                        "--verifier", "none"), check=False, timeout=120)
    assert proc.returncode == 2 and f"cannot reach {url}: timed out" in proc.stderr
    assert time.monotonic() - start < 60
    # the retriever's own arguments
    for extra, reason in ((["--retriever", "rest", "--rest-index", "x"], "--rest-url: required with --retriever rest"),
                          (["--retriever", "rest", "--rest-url", closed], "--rest-index: required"),
                          ([*rest_args(closed), "--index", str(built["index"])], "--index: not used with"),
                          ([], "--index: required"),
                          (rest_args("ftp://127.0.0.1:1"), "expected an http:// or https:// URL")):
        proc = run_command(project_args(built["questions"], tmp_path / "c", *extra, "--verifier", "none"),
                           check=False, timeout=120)
        assert proc.returncode == 2 and reason in proc.stderr, (extra, proc.stderr[-1000:])


def test_serve_index_refuses_unsafe_or_wrong_settings(built):
    env = {"NANOKNOW_INDEX_TOKEN": ""}
    index = ["--index", str(built["index"])]
    for args, reason in (([*index, "--host", "0.0.0.0"], "refusing to serve beyond loopback without a token: set "
                                                        "NANOKNOW_INDEX_TOKEN"),
                         ([*index, "--name", "../etc"], "--name: index name '../etc' must be"),
                         (["--index", str(built["root"] / "missing")], "index directory does not exist"),
                         ([*index, "--max-hits", "0"], "--max-hits: must be at least 1")):
        proc = run_command(["nanoknow", "serve-index", *args, "--port", str(free_port())], env=env, check=False,
                           timeout=60)
        assert proc.returncode == 2 and reason in proc.stderr, (args, proc.stderr[-1000:])
