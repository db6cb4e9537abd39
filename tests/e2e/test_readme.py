"""The curl example in the README works when pasted (against a server on a free port)."""
import re
import subprocess

from conftest import ROOT


def test_readme_curl_example(server):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(# try it\n.*?)```", readme, re.S)
    assert blocks, "the README has a '# try it' curl block"
    assert '"agent_id": "test-' in blocks[0], "the example uses a test- agent ID, so trying it records no history"
    script = blocks[0].replace("127.0.0.1:8080", f"127.0.0.1:{server.port}")
    out = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert '"result":"fail"' in out.stdout and "consistency:sum_equals" in out.stdout
