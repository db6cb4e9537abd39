"""`--trusted-proxies`: behind a real reverse proxy (nginx from Debian, started here on
loopback) two clients with different addresses get separate free allowances; the forwarding
headers of a peer that is not a trusted proxy are ignored (a spoofed `X-Forwarded-For` does not
buy a fresh allowance); without the option nothing forwarded is believed."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def request(i):
    return {"task_id": f"proxy-{i}", "agent_id": "test-proxy", "expected_schema": {"type": "object"},
            "submitted_output": {"i": i}}


def post(url, i, address="127.0.0.1", headers=None):
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
        return client.post(url, json=request(i), headers=headers or {})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def nginx():
    """nginx on 127.0.0.1 in front of a given upstream port; stopped after the test."""
    if not os.path.exists(NGINX):
        if os.environ.get("VERIFIER_REQUIRE_COMPONENTS"):
            pytest.fail("nginx is missing (scripts/test.sh installs Debian's nginx-light)")
        pytest.skip("nginx is not installed")
    procs, prefixes = [], []

    def start(upstream: int) -> str:
        prefix = Path(tempfile.mkdtemp(prefix="nginx-"))
        prefixes.append(prefix)
        (prefix / "logs").mkdir()
        port = free_port()
        user = "" if os.geteuid() != 0 else "user root;"
        (prefix / "nginx.conf").write_text(f"""
{user}
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {prefix}/body;
  proxy_temp_path {prefix}/proxy;
  fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi;
  scgi_temp_path {prefix}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://127.0.0.1:{upstream};
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      # A 402's PAYMENT-REQUIRED header is larger than nginx's default 4 KB header buffer.
      proxy_buffer_size 32k;
      proxy_buffers 8 32k;
    }}
  }}
}}
""")
        proc = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return f"http://127.0.0.1:{port}"
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)
    for prefix in prefixes:
        shutil.rmtree(prefix, ignore_errors=True)


def test_behind_nginx_each_client_has_its_own_allowance(start_server, nginx):
    server = start_server(allowance=1, env={"VERIFIER_TRUSTED_PROXIES": "127.0.0.1/32"})
    proxy = nginx(server.port) + "/verify/schema"
    # Two callers at different addresses, both through nginx (whose peer address is 127.0.0.1).
    assert post(proxy, 1, address="127.0.0.3").status_code == 200
    assert post(proxy, 2, address="127.0.0.4").status_code == 200
    assert post(proxy, 3, address="127.0.0.3").status_code == 402
    # A caller that sends its own X-Forwarded-For through nginx: nginx appends the address it
    # saw, and that right-most untrusted hop is the client (the spoofed left part is not).
    spoofed = post(proxy, 4, address="127.0.0.3", headers={"X-Forwarded-For": "198.51.100.99"})
    assert spoofed.status_code == 402, "a spoofed X-Forwarded-For bought a fresh allowance"


def test_forwarding_headers_count_only_from_a_trusted_peer(start_server):
    server = start_server(allowance=1, env={"VERIFIER_TRUSTED_PROXIES": "127.0.0.1"})
    url = server.url + "/verify/schema"
    # From the trusted peer, the forwarded client is the client.
    assert post(url, 1, headers={"X-Forwarded-For": "198.51.100.7"}).status_code == 200
    assert post(url, 2, headers={"X-Forwarded-For": "198.51.100.7"}).status_code == 402
    assert post(url, 3, headers={"Forwarded": 'for="[2001:db8::7]:4711"'}).status_code == 200
    # From another peer the header is ignored: its own address is the client, spoof or not.
    assert post(url, 4, address="127.0.0.2", headers={"X-Forwarded-For": "198.51.100.8"}).status_code == 200
    assert post(url, 5, address="127.0.0.2", headers={"X-Forwarded-For": "198.51.100.9"}).status_code == 402


def test_without_the_option_nothing_forwarded_is_believed(start_server):
    server = start_server(allowance=1)
    url = server.url + "/verify/schema"
    assert post(url, 1, headers={"X-Forwarded-For": "198.51.100.7"}).status_code == 200
    assert post(url, 2, headers={"X-Forwarded-For": "198.51.100.8"}).status_code == 402


def test_a_bad_list_is_refused_at_start(tmp_path):
    from conftest import BIN
    run = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path),
                          "--trusted-proxies", "10.0.0.0/8,not-a-network"],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2, run
    assert "not an IP address or network (CIDR): entry 2 of the list" in run.stderr, run.stderr
