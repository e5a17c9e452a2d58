"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the judge tests.

(No OpenAI test server existed in tests/ when the judge was written; this one is small and
generic: ``ScriptedServer(script)`` answers each ``POST .../chat/completions`` with
``script(messages)`` and records every request body.) The test below checks the server
itself against the project's real ``openai`` backend.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TRUE_REPLY = '{"correct": true, "reason": "same answer"}'
FALSE_REPLY = '<think>compare the two</think>\n```json\n{"correct": false, "reason": "another answer"}\n```'
GARBAGE_REPLY = "The candidate looks right to me."


def question_of(messages: list[dict]) -> str:
    """The question line of a judge prompt (what the scripted replies depend on)."""
    found = re.search(r"^Question: (.*)$", messages[-1]["content"], re.M)
    return found.group(1) if found else ""


def reply_for_question(question: str) -> str:
    """Deterministic scripted verdict: sha256 of the question modulo 3 picks true/false/garbage."""
    return (TRUE_REPLY, FALSE_REPLY, GARBAGE_REPLY)[hashlib.sha256(question.encode()).digest()[0] % 3]


def hashed_script(messages: list[dict]) -> str:
    """Server script: the reply that :func:`reply_for_question` gives the prompt's question."""
    return reply_for_question(question_of(messages))


class ScriptedServer:
    """Threaded HTTP server speaking the OpenAI chat-completions protocol; use as a context manager."""

    def __init__(self, script=hashed_script):
        self.script = script
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                with owner._lock:
                    owner.requests.append(body)
                content = owner.script(body["messages"])
                payload = json.dumps({"id": "cmpl-test", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_scripted_server_speaks_openai_chat_completions():
    from projection.llm import make_backend

    messages = [{"role": "user", "content": "Question: who wrote Hamlet?\nCandidate answer: Shakespeare"}]
    with ScriptedServer() as server:
        backend = make_backend("openai", "test-judge", base_url=server.base_url, progress=False)
        out = backend.generate([messages], max_new_tokens=7)
    assert out == [reply_for_question("who wrote Hamlet?")]
    assert len(server.requests) == 1
    assert server.requests[0]["model"] == "test-judge" and server.requests[0]["max_tokens"] == 7
