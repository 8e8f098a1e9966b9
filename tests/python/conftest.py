# SPDX-License-Identifier: MIT
"""Fixtures for the Python binding's tests: a real pubd on a temporary socket.

One pubd per test session (udp fabric on loopback, a free UDP port), started
from $PUBD (ctest sets it; else $BUILD/daemon/pubd, else build/daemon/pubd)
and waited for by polling its socket, never by a fixed sleep. At the end it
gets SIGTERM and must exit 0 with no sanitizer report in its log.

The binding itself comes from $PYTHONPATH (libpub/python) and loads
$PUB_LIBRARY (the build tree's libpub.so.1); ctest sets both.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "libpub" / "python"))  # when run by hand without PYTHONPATH
if "PUB_LIBRARY" not in os.environ:
    _built = Path(os.environ.get("BUILD", REPO / "build")) / "libpub" / "libpub.so.1"
    if _built.exists():
        os.environ["PUB_LIBRARY"] = str(_built)

import pub  # noqa: E402

# Deadlines (seconds before calling it a failure), not expected durations.
START_DEADLINE = 30
STOP_DEADLINE = 30
TEST_DEADLINE = 120

# Groups of the test daemon: one per kind of test, so they never see each
# other's messages; "secret" lets no one publish or subscribe.
GROUPS = ["t.round", "t.big", "t.iter", "t.sel", "t.aio", "t.err", "t.misc", "t.views", "t.unsub.shm", "t.unsub.socket"]
MAX_MESSAGE = 1 << 20
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")


def _pubd_path() -> str:
    path = os.environ.get("PUBD") or str(Path(os.environ.get("BUILD", REPO / "build")) / "daemon" / "pubd")
    if not os.access(path, os.X_OK):
        pytest.exit(f"pubd not found at {path!r}: set PUBD or BUILD=<cmake build dir>", returncode=2)
    return path


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_config(work: Path, port: int) -> Path:
    sock = work / "pubd.sock"
    # Multicast addresses from the port, so two runs at once do not share one.
    lines = [
        "daemon:",
        f"  socket: {sock}",
        "  log_level: info",
        "fabric:",
        "  type: udp",
        "  address: 127.0.0.1",
        f"  udp_port: {port}",
        "limits:",
        f"  max_message_size: {MAX_MESSAGE}",
        "groups:",
    ]
    for i, g in enumerate(GROUPS + ["secret"]):
        lines += [f"  - name: {g}", f"    address: 239.{port >> 8 & 255}.{port & 255}.{i + 1}"]
        if g == "t.views":
            lines += ["    repair: on"]  # test_query's repair_stats
    other_uid = os.getuid() + 4242  # anyone but us
    lines += [f"    publish: [uid:{other_uid}]", f"    subscribe: [uid:{other_uid}]"]
    conf = work / "pubd.yaml"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _pubd_env() -> dict[str, str]:
    """pubd's environment: the sanitizers' full checks, whatever the interpreter needed."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the interpreter's libasan; pubd links its own
    env["ASAN_OPTIONS"] = "detect_leaks=1:halt_on_error=1:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    return env


class Daemon:
    """A running pubd: its socket, config, log and process."""

    def __init__(self, work: Path, port: int) -> None:
        self.work = work
        self.port = port
        self.config = _write_config(work, port)
        self.socket = str(work / "pubd.sock")
        self.log_path = work / "pubd.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [_pubd_path(), "-c", str(self.config)], stdout=self._log, stderr=subprocess.STDOUT, env=_pubd_env()
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self) -> None:
        """Poll until pubd accepts a client and has joined every group."""
        end = time.monotonic() + START_DEADLINE
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pubd exited with {self.proc.returncode} at start:\n{self.log()}")
            if os.path.exists(self.socket):
                try:
                    with pub.Client(self.socket, client_name="conftest") as c:
                        if all(g["joined"] == 1 for g in c.query("groups")):
                            return
                except pub.Unreachable:
                    pass  # the socket file is there a moment before listen()
            if time.monotonic() > end:
                raise RuntimeError(f"pubd not ready after {START_DEADLINE}s:\n{self.log()}")
            time.sleep(0.05)  # poll interval, not a synchronisation

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9
        finally:
            self._log.close()


@pytest.fixture(scope="session")
def pubd() -> Iterator[Daemon]:
    """One real pubd for the session; it must stop with status 0 and a clean log."""
    with tempfile.TemporaryDirectory(prefix="pubd-py.") as tmp:
        d = Daemon(Path(tmp), _free_udp_port())
        try:
            d.wait_ready()
        except BaseException:
            d.stop()
            raise
        yield d
        status = d.stop()
        log = d.log()
        assert status == 0, f"pubd exited with status {status}:\n{log}"
        reports = [m for m in SANITIZER_MARKS if m in log]
        assert not reports, f"sanitizer report in pubd's log:\n{log}"


@pytest.fixture
def client(pubd: Daemon) -> Iterator[pub.Client]:
    """A client of the session's pubd (default transport: $PUBD_TRANSPORT or shm)."""
    with pub.Client(pubd.socket, client_name="pytest") as c:
        yield c


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """Fail a test that hangs (a blocking recv never returning) instead of hanging ctest.

    The binding waits in slices, so Python's signal handler gets to run.
    """

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"test still running after {TEST_DEADLINE}s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_DEADLINE)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
