"""`verifier store backup` / `restore` on the embedded store: a backup taken while the server
serves (through its --metrics-listen port), then more calls, then a restore into the stopped
server's data directory gives back exactly the backed-up `/reputation` and allowance counts.
A restore while the server runs is refused; an existing file is never overwritten."""
import subprocess

import httpx

from conftest import BIN, free_port


def verify(server, i, output):
    return httpx.post(server.url + "/verify/schema", json={
        "task_id": f"backup-{i}", "agent_id": "backup-agent",
        "expected_schema": {"type": "object", "required": ["total"]}, "submitted_output": output})


def store(*args):
    return subprocess.run([BIN, "store", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_backup_while_serving_then_restore_gives_the_same_counts(start_server, tmp_path):
    data = tmp_path / "data"
    metrics = free_port()
    args = ["--store", "embedded", "--metrics-listen", f"127.0.0.1:{metrics}"]
    server = start_server(allowance=20, data_dir=str(data), args=args)
    for i, output in enumerate([{"total": 1}, {"total": 2}, {}, {"total": 3}]):
        assert verify(server, i, output).status_code == 200
    reputation = httpx.get(server.url + "/reputation/backup-agent").json()
    assert reputation["total"] == 4, reputation

    backup = tmp_path / "backup.redb"
    made = store("backup", backup, "--server", f"http://127.0.0.1:{metrics}")
    assert made.returncode == 0, made.stderr
    assert "4 outcomes" in made.stdout and "1 agents" in made.stdout, made.stdout
    again = store("backup", backup, "--server", f"http://127.0.0.1:{metrics}")
    assert again.returncode == 2 and "exists" in again.stderr

    # The store keeps moving after the backup.
    for i in range(4, 7):
        assert verify(server, i, {"total": i}).status_code == 200
    assert httpx.get(server.url + "/reputation/backup-agent").json()["total"] == 7
    refused = store("restore", backup, "--data-dir", data)
    assert refused.returncode == 2 and "stop the server" in refused.stderr, refused.stderr
    server.stop()

    restored = store("restore", backup, "--data-dir", data)
    assert restored.returncode == 0, restored.stderr
    assert list(data.glob("verifier.redb.before-restore-*")), "the replaced store is kept"
    server = start_server(allowance=20, data_dir=str(data), args=args)
    assert httpx.get(server.url + "/reputation/backup-agent").json() == reputation
    # 4 of the client's 20 free calls were used at the backup: this is the fifth.
    fifth = verify(server, 10, {"total": 10})
    assert fifth.headers["free-allowance-remaining"] == "15", fifth.headers
    server.stop()

    # Offline (the server stopped), the store is opened directly.
    offline = store("backup", tmp_path / "offline.redb", "--data-dir", data)
    assert offline.returncode == 0 and "5 outcomes" in offline.stdout, offline.stdout + offline.stderr
    not_a_backup = tmp_path / "junk.redb"
    not_a_backup.write_bytes(b"not a store")
    junk = store("restore", not_a_backup, "--data-dir", data)
    assert junk.returncode == 2 and "is not a store backup" in junk.stderr
