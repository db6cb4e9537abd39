#!/usr/bin/env python3
"""Cold start of the local server, for scripts/bench.sh.

Usage: coldstart.py BINARY BODY_FILE RUNS [PIN_CPUS]

Each run starts `BINARY serve` on a fresh port with a fresh data directory (so the run also
creates the signing key and the store file) and polls it over raw sockets every 0.5 ms:
the time from process start (just before the spawn) to the first 200 on GET /health, and to
the first 200 on POST /verify/schema with BODY_FILE (a real, signed verification). Prints one
line per run and the medians.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_of(port, request):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(request)
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            parts = data.split(b" ", 2)
            return int(parts[1]) if len(parts) > 1 else None
    except OSError:
        return None


def wait_for(port, request, deadline):
    while time.monotonic() < deadline:
        if status_of(port, request) == 200:
            return time.monotonic_ns()
        time.sleep(0.0005)
    raise SystemExit("server did not answer 200 within 10 s")


def main():
    binary, body_file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pin = sys.argv[4] if len(sys.argv) > 4 else ""
    body = open(body_file, "rb").read()
    health = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    verify = (
        b"POST /verify/schema HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    to_health, to_verify = [], []
    for i in range(runs):
        port = free_port()
        with tempfile.TemporaryDirectory() as data:
            env = dict(os.environ, RUST_LOG="warn")
            cmd = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data,
                   "--free-allowance-per-day", "1000000000"]
            if pin:
                cmd = ["taskset", "-c", pin] + cmd
            start = time.monotonic_ns()
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 10
                h = (wait_for(port, health, deadline) - start) / 1e6
                v = (wait_for(port, verify, deadline) - start) / 1e6
            finally:
                proc.terminate()
                proc.wait()
        to_health.append(h)
        to_verify.append(v)
        print(f"  run {i + 1}: first 200 on /health {h:.1f} ms, on POST /verify/schema {v:.1f} ms")
    print(f"COLD health_median_ms={statistics.median(to_health):.1f} "
          f"verify_median_ms={statistics.median(to_verify):.1f} runs={runs} "
          f"health_all={','.join(f'{x:.1f}' for x in to_health)}")


if __name__ == "__main__":
    main()
