"""`--trusted-proxies`: behind a real reverse proxy (nginx from Debian, started here on
loopback) two clients with different addresses get separate free allowances; the forwarding
headers of a peer that is not a trusted proxy are ignored (a spoofed `X-Forwarded-For` does not
buy a fresh allowance); without the option nothing forwarded is believed; TLS terminates at the
proxy (a self-signed certificate made by openssl)."""
import os
import shutil
import socket
import ssl
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

    def start(upstream: int, tls: bool = False) -> str:
        """The proxy's base URL; with `tls`, HTTPS with a self-signed certificate for 127.0.0.1
        (made here by openssl), whose file is then `start.cert`."""
        prefix = Path(tempfile.mkdtemp(prefix="nginx-"))
        prefixes.append(prefix)
        (prefix / "logs").mkdir()
        port = free_port()
        listen = f"127.0.0.1:{port}"
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-nodes", "-keyout", str(prefix / "key.pem"), "-out", str(prefix / "cert.pem"),
                            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                           check=True, capture_output=True)
            start.cert = prefix / "cert.pem"
            listen += f" ssl;\n    ssl_certificate {prefix}/cert.pem;\n    ssl_certificate_key {prefix}/key.pem"
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
    listen {listen};
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
                return f"https://127.0.0.1:{port}" if tls else f"http://127.0.0.1:{port}"
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


def test_tls_terminates_at_the_proxy(start_server, nginx, tmp_path):
    """The TLS story the docs give: nginx holds the certificate, the verifier listens on
    loopback in plain HTTP with the proxy trusted, and its documents name the https URL."""
    url = "https://verifier.example"  # the public name the certificate would carry
    server = start_server(env={"VERIFIER_TRUSTED_PROXIES": "127.0.0.1", "VERIFIER_PUBLIC_URL": url})
    proxy = nginx(server.port, tls=True)
    # Through the proxy, with its self-signed certificate trusted.
    with httpx.Client(verify=ssl.create_default_context(cafile=str(nginx.cert)), timeout=30) as client:
        answer = client.post(proxy + "/verify/schema", json=request(1))
        assert answer.status_code == 200, answer.text
        assert answer.json()["verify"]["public_key_url"] == url + "/.well-known/agent-card.json"
        assert client.get(proxy + "/.well-known/agent-card.json").status_code == 200
    with pytest.raises(httpx.ConnectError):
        httpx.get(proxy + "/health", timeout=5)  # an unknown certificate is refused by default


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
