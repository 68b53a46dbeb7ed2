"""A Git server for the GitOps tests: ``git http-backend`` (Git's smart HTTP protocol, fetch and push) behind a
small threaded HTTP server on a loopback port, serving the bare repositories under one folder.

    python -m tests.gitserver ROOT PORT_FILE

serves ``http://127.0.0.1:<port>/<repo>.git`` for every bare repository ``ROOT/<repo>.git`` and writes the port
it listens on to ``PORT_FILE`` once it accepts connections. tests/gitopsctl.py starts it as a process of its
own, which dies with the test process. Every repository is exported and takes pushes without credentials: it
listens on loopback only, for the test's processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

#: Request headers git http-backend reads, as CGI variables.
_CGI_HEADERS = ("Content-Type", "Content-Encoding", "Git-Protocol")


class GitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root: Path
    git: str

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # git pushes large packs chunked
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self) -> None:
        url = urlsplit(self.path)
        body = self._body() if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "REMOTE_ADDR": self.client_address[0],
            "REMOTE_USER": "nodefleet-test",  # receive-pack (push) is served to an authenticated user only
            "CONTENT_LENGTH": str(len(body)),
            "SERVER_PROTOCOL": self.request_version,
        }
        for header in _CGI_HEADERS:
            value = self.headers.get(header)
            if value is not None:
                key = header.upper().replace("-", "_")
                env[key if header == "Content-Type" else f"HTTP_{key}"] = value
        if "GIT_PROTOCOL" not in env and "HTTP_GIT_PROTOCOL" in env:
            env["GIT_PROTOCOL"] = env["HTTP_GIT_PROTOCOL"]
        result = subprocess.run([self.git, "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if result.returncode != 0 and not result.stdout:
            status, payload = 500, result.stderr
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"{self.command} {self.path} -> {format % args}\n")


def serve(root: Path, port_file: Path) -> None:
    git = shutil.which("git")
    if git is None:
        raise SystemExit("git is not on PATH")
    handler = type("Handler", (GitHandler,), {"root": root, "git": git})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    temp = port_file.with_name(port_file.name + ".tmp")
    temp.write_text(str(server.server_address[1]))
    temp.replace(port_file)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m tests.gitserver ROOT PORT_FILE")
    serve(Path(sys.argv[1]), Path(sys.argv[2]))
