"""A fault a real facilitator cannot be made to produce on demand: its answer to /settle lost on
the way back. `CuttingProxy` forwards every request to the real facilitator on loopback; for the
next N `/settle` calls it either forwards the call and then closes the connection without
answering (`mode="after"`: the payment is settled, the server never learns it) or closes it
without forwarding (`mode="before"`: nothing happened, the server cannot know that)."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from deployment import forward, send_answer


class CuttingProxy:
    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.cut = 0
        self.mode = "after"
        self.settles_forwarded = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once: no delayed-ACK stall

            def _relay(self, method: str):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                settle = self.path.rstrip("/").endswith("/settle")
                cutting = settle and proxy.cut > 0
                if cutting:
                    proxy.cut -= 1
                if cutting and proxy.mode == "before":
                    self.close_connection = True
                    self.connection.close()
                    return
                answer = forward(proxy.upstream + self.path, method, self.headers, body, timeout=60)
                if settle:
                    proxy.settles_forwarded += 1
                if cutting:  # settled upstream; the answer is lost
                    self.close_connection = True
                    self.connection.close()
                    return
                send_answer(self, *answer)

            def do_GET(self):
                self._relay("GET")

            def do_POST(self):
                self._relay("POST")

            def log_message(self, fmt, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def cut_next_settle(self, mode: str = "after", times: int = 1) -> None:
        self.mode, self.cut = mode, times

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
