# SPDX-License-Identifier: MIT
"""The examples in libpub/python/examples run, so they stay correct."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

EXAMPLES = REPO / "libpub" / "python" / "examples"


def _env(socket: str) -> dict[str, str]:
    env = dict(os.environ, PUBD_SOCKET=socket)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "libpub" / "python"), env.get("PYTHONPATH")]))
    return env


def test_publisher_and_subscriber_examples(pubd) -> None:
    env = _env(pubd.socket)
    sub = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "subscriber.py"), "t.misc", "--count", "5", "--timeout", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert sub.stdout is not None
        assert sub.stdout.readline() == "subscribed\n"  # it is subscribed: publish now
        pubr = subprocess.run(
            [sys.executable, str(EXAMPLES / "publisher.py"), "t.misc", "--count", "5"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert pubr.returncode == 0, pubr.stderr
        out, err = sub.communicate(timeout=60)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    assert sub.returncode == 0, err
    lines = out.splitlines()
    assert [ln.split(" ", 3)[3] for ln in lines] == [f"message {i}" for i in range(5)]
    assert all(ln.startswith("t.misc ") for ln in lines)


def test_examples_report_an_unreachable_pubd(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / "publisher.py"), "t.misc"],
        capture_output=True,
        text=True,
        env=_env(str(tmp_path / "none.sock")),
        timeout=60,
    )
    assert r.returncode == 2 and "ENOENT" in r.stderr
