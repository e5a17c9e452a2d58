"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol, for tests.

Its answers are a function of the request (``reply(messages) -> str``, by default an echo of
the last user message). Faults are injected from a queue consumed one per request, in arrival
order: ``429`` / ``500`` / ``503`` (error status, with ``Retry-After: 0`` on 429), ``"sleep"``
(answer only after ``sleep_s`` seconds, past the client's timeout), ``400`` (a bad request).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAIServer:
    """``with FakeOpenAIServer() as server: server.base_url`` -> ``http://127.0.0.1:<port>/v1``."""

    def __init__(self, reply=None, faults=(), sleep_s: float = 2.0):
        self.reply = reply or (lambda messages: "ECHO " + messages[-1]["content"])
        self.faults = list(faults)
        self.sleep_s = sleep_s
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: dict, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    fault = server.faults.pop(0) if server.faults else None
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                if fault in (429, 500, 503):
                    headers = {"Retry-After": "0"} if fault == 429 else None
                    return self._send(fault, {"error": {"message": f"injected {fault}"}}, headers)
                if fault == 400:
                    return self._send(400, {"error": {"message": "injected bad request"}})
                if fault == "sleep":
                    time.sleep(server.sleep_s)
                content = server.reply(body["messages"])
                self._send(200, {"id": "x", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
