"""A soak of the emulated deployment's Runtime API path (deployment.py); run by
scripts/runtime-api-soak.sh, not by the test command (a measurement, not an assertion).

One local chain, one deployment with no free allowance; ROUNDS times: the 402, the paid call
and its replay (three verify invocations, back to back). Prints one line per round that did not
answer 402, 200, 402 within 5 s each, and a JSON summary. DIRECT=1 gives the functions the
emulator's Runtime API itself instead of the deployment's relay (see `deployment.Relay`)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "x402"))

import httpx  # noqa: E402

from deployment import Deployment  # noqa: E402

EXPECTED = (402, 200, 402)
SLOW_SECONDS = 5.0


def soak(rounds: int, direct: bool) -> dict:
    from localchain import LocalChain
    from test_payments import pay_header

    odd: list[str] = []
    with LocalChain() as chain:
        overrides = {"FreeAllowancePerDay": 0, "PayToBase": chain.payee_address,
                     "PayToSolana": chain.svm_payee_address, "FacilitatorUrl": chain.facilitator_url}
        with Deployment(overrides, runtime_via=(lambda url: url) if direct else None) as stack:
            url = stack.url + "/verify/schema"
            for i in range(rounds):
                body = {"task_id": f"soak-{i}", "agent_id": "soak-seller",
                        "expected_schema": {"type": "object"}, "submitted_output": {}}
                seen, header = [], None
                for step in range(3):
                    t0 = time.monotonic()
                    try:
                        headers = {"PAYMENT-SIGNATURE": header} if header else {}
                        r = httpx.post(url, json=body, headers=headers, timeout=60)
                        seen.append((r.status_code, time.monotonic() - t0))
                        if step == 0 and r.status_code == 402:
                            header = pay_header(chain, r.headers["payment-required"])
                    except httpx.HTTPError as e:
                        seen.append((type(e).__name__, time.monotonic() - t0))
                if tuple(s for s, _ in seen) != EXPECTED or any(d > SLOW_SECONDS for _, d in seen):
                    odd.append(f"round {i}: " + ", ".join(f"{s} in {d:.2f} s" for s, d in seen))
                    print(odd[-1], flush=True)
    return {"rounds": rounds, "requests": 3 * rounds, "direct": direct, "odd_rounds": len(odd)}


if __name__ == "__main__":
    print(json.dumps(soak(int(os.environ.get("ROUNDS", "1000")), os.environ.get("DIRECT") == "1")))
