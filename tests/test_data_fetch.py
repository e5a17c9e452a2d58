"""``nanoknow data fetch`` against real HTTP servers on 127.0.0.1 (the upstream host is unreachable here)."""

import functools
import hashlib
import http.server
import socket
import threading
from pathlib import Path

import pytest

from projection.data.fetch import fetch
from projection.data.manifest import load_manifest


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; a test can corrupt one path or cut one response short."""

    corrupt: set = set()
    truncate: set = set()
    requests: list = []

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):  # noqa: N802 - http.server API
        type(self).requests.append(self.path)
        relative = self.path.lstrip("/")
        if relative in self.corrupt or relative in self.truncate:
            data = (Path(self.directory) / relative).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if relative in self.corrupt:
                self.wfile.write(data.replace(b"1", b"7", 1))
            else:
                self.wfile.write(data[: len(data) // 2])  # then the connection closes
            return
        super().do_GET()


@pytest.fixture()
def server(nanoknow_data_dir):
    handler = type("Handler", (_Handler,), {"corrupt": set(), "truncate": set(), "requests": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(handler, directory=str(nanoknow_data_dir)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_fetch_downloads_checks_and_is_a_noop_the_second_time(server, tmp_path, run):
    handler, url = server
    outcomes = fetch(tmp_path, base_url=url, datasets=["nq", "hotpotqa"], corpora=["fineweb-edu"])
    assert {o.status for o in outcomes} == {"downloaded"}
    manifest = load_manifest().by_path()
    for outcome in outcomes:
        assert _sha256(tmp_path / outcome.path) == manifest[outcome.path].sha256
    assert len(outcomes) == 8  # 2 answers + 2 x (2 topics + qrels)
    handler.requests.clear()
    again = fetch(tmp_path, base_url=url, datasets=["nq", "hotpotqa"], corpora=["fineweb-edu"])
    assert {o.status for o in again} == {"present"} and handler.requests == []
    # what was fetched is a valid data root
    run(["nanoknow", "data", "verify", "--data-dir", str(tmp_path)])


def test_wrong_hash_writes_nothing_and_keeps_a_good_file(server, tmp_path, run):
    handler, url = server
    path = "nq/fineweb-edu/topics.nanoknow-nq-fineweb.supported.tsv"
    handler.corrupt.add(path)
    proc = run(["nanoknow", "data", "fetch", "--dest", str(tmp_path), "--base-url", url,
                "--datasets", "nq", "--corpora", "fineweb-edu"], check=False)
    assert proc.returncode == 2
    assert "sha256 mismatch" in proc.stderr and path in proc.stderr
    assert not (tmp_path / path).exists()
    assert not list(tmp_path.rglob("*.part"))
    # the other files did arrive (nothing computed is lost)
    assert (tmp_path / "nq/answers.nanoknow-nq.jsonl").is_file()
    # a correct file in place is never replaced by a corrupt download
    good = tmp_path / "nq/answers.nanoknow-nq.jsonl"
    before = good.read_bytes()
    handler.corrupt.add("nq/answers.nanoknow-nq.jsonl")
    fetch(tmp_path, base_url=url, datasets=["nq"], corpora=["fineweb-edu"])
    assert good.read_bytes() == before


def test_partial_response_leaves_no_file(server, tmp_path):
    handler, url = server
    path = "nq/fineweb-edu/qrels.nanoknow-nq-fineweb.supported.txt"
    handler.truncate.add(path)
    outcomes = {o.path: o for o in fetch(tmp_path, base_url=url, datasets=["nq"], corpora=["fineweb-edu"])}
    assert outcomes[path].status == "failed"
    assert not (tmp_path / path).exists() and not list(tmp_path.rglob("*.part"))


def test_missing_upstream_file_and_server_down(server, tmp_path, run):
    _, url = server
    # The reference copy lacks the SQuAD qrels: a 404 names the URL and the HTTP error.
    outcomes = fetch(tmp_path, base_url=url, datasets=["squad"], corpora=["fineweb-edu"])
    failed = [o for o in outcomes if o.status == "failed"]
    assert [o.path for o in failed] == ["squad/fineweb-edu/qrels.nanoknow-squad-fineweb.supported.txt"]
    assert "404" in failed[0].reason
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    proc = run(["nanoknow", "data", "fetch", "--dest", str(tmp_path / "x"), "--base-url", dead,
                "--datasets", "nq", "--timeout", "5"], check=False)
    assert proc.returncode == 2 and "ConnectionError" in proc.stderr
    assert not (tmp_path / "x").exists() or not any(p.is_file() for p in (tmp_path / "x").rglob("*"))
