"""The ways to run the local server besides `cargo run`: the systemd unit (checked by
`systemd-analyze verify`, and its hardening scored by `systemd-analyze security --offline`), the
container image (built and asked for /health where a Docker daemon answers; skipped with the
reason otherwise) and `verifier health`, the image's health check."""
import re
import shutil
import subprocess
import uuid

import httpx
import pytest

from conftest import BIN, ROOT, free_port

UNIT = ROOT / "ops" / "systemd" / "agent-output-verifier.service"


def unit_for_this_build(tmp_path):
    path = tmp_path / UNIT.name
    path.write_text(UNIT.read_text().replace("/usr/local/bin/verifier", str(BIN)))
    return path


def test_the_systemd_unit_verifies_and_is_hardened(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    unit = unit_for_this_build(tmp_path)
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr
    scored = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)],
                            capture_output=True, text=True)
    level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", scored.stdout)
    assert level, scored.stdout[-500:] + scored.stderr
    # 0 is fully locked down, 10 is an unconfined service; systemd calls up to 2.0 "OK".
    assert float(level.group(1)) <= 2.0, scored.stdout[-2000:]


def test_verifier_health_is_the_images_health_check(server):
    assert subprocess.run([BIN, "health", server.url + "/health"]).returncode == 0
    down = subprocess.run([BIN, "health", f"http://127.0.0.1:{free_port()}/health"], capture_output=True, text=True)
    assert down.returncode == 1 and "verifier health:" in down.stderr


def docker_available() -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True)
    return None if info.returncode == 0 else "no Docker daemon answers (docker info failed)"


def test_the_container_image_builds_and_answers_health():
    reason = docker_available()
    if reason:
        pytest.skip(f"the container image is not built: {reason}")
    tag = f"agent-output-verifier-test:{uuid.uuid4().hex[:8]}"
    built = subprocess.run(["docker", "build", "-t", tag, str(ROOT)], capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stderr[-3000:]
    port = free_port()
    name = f"verifier-{uuid.uuid4().hex[:8]}"
    try:
        run = subprocess.run(["docker", "run", "-d", "--name", name, "--read-only", "--cap-drop", "ALL",
                              "-e", "VERIFIER_PRIVATE=true", "-p", f"127.0.0.1:{port}:8080", tag],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        for _ in range(100):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                subprocess.run(["sleep", "0.1"])
        else:
            raise AssertionError(subprocess.run(["docker", "logs", name], capture_output=True, text=True).stderr)
        assert health.status_code == 200 and health.json()["private"] is True
        user = subprocess.run(["docker", "inspect", "-f", "{{.Config.User}}", tag], capture_output=True, text=True)
        assert user.stdout.strip() == "65532:65532", "the image runs as a non-root user"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
