# SPDX-License-Identifier: MIT
"""fork(): a child may close an inherited client (pub.h), even one another thread was using."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

import pub

# Seconds the child gets to close and exit (a deadline, not a duration).
CHILD_DEADLINE = 10


def _wait_child(pid: int) -> int:
    """The child's exit status; kills it and fails if it hangs past the deadline."""
    end = time.monotonic() + CHILD_DEADLINE
    while time.monotonic() < end:
        r, status = os.waitpid(pid, os.WNOHANG)
        if r:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)  # poll interval
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"the child did not exit within {CHILD_DEADLINE}s (deadlocked in close()?)")


def _fork(child) -> int:
    """Run child() in a forked child, which exits 0 if it returns True, else 1."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if child() else 1
        except BaseException:  # noqa: BLE001 - whatever happens, never return into pytest
            code = 3
        finally:
            os._exit(code)
    return _wait_child(pid)


def _blocked_in_recv(c: pub.Client) -> threading.Thread:
    errors: list[BaseException] = []

    def receive() -> None:
        try:
            c.recv()  # blocks: nothing is published to t.misc here
        except pub.Error as e:
            errors.append(e)  # Unreachable once the main thread closes it

    t = threading.Thread(target=receive, daemon=True)
    t.start()
    # Wait (bounded) until it holds the client's lock inside pub_recv.
    end = time.monotonic() + CHILD_DEADLINE
    while not c._lock.locked():
        assert time.monotonic() < end, "the recv thread never took the client's lock"
        time.sleep(0.001)
    return t


@pytest.mark.parametrize("how", ["close", "with"])
def test_child_closes_a_client_another_thread_was_receiving_on(pubd, how: str) -> None:
    c = pub.Client(pubd.socket, client_name="pytest-fork")
    c.subscribe("t.misc")
    t = _blocked_in_recv(c)
    try:
        # Fork while the other thread is inside recv() (retry if it was between slices).
        for _ in range(100):
            if c._lock.locked():
                break
            time.sleep(0.001)

        def child() -> bool:
            if how == "close":
                c.close()
            else:
                with c:
                    pass
            return c.closed

        assert _fork(child) == 0
        # The parent's connection goes on.
        c.publish("t.misc", b"after the child", sync=True)
        assert c.info().connected
    finally:
        c.close()
        t.join(CHILD_DEADLINE)
    assert not t.is_alive()


def test_child_may_not_use_an_inherited_client(pubd) -> None:
    with pub.Client(pubd.socket, client_name="pytest-fork") as c:
        c.subscribe("t.misc")

        def child() -> bool:
            refused = 0
            for call in (
                lambda: c.publish("t.misc", b"from the child"),
                lambda: c.recv(0),
                lambda: c.subscribe("t.misc"),
                lambda: c.query("groups"),
                c.fileno,
            ):
                try:
                    call()
                except pub.Error as e:
                    refused += e.code == errno.EINVAL and "fork" in str(e)
            c.close()
            return refused == 5

        assert _fork(child) == 0
        c.publish("t.misc", b"parent", sync=True)
        m = c.recv(timeout=10)
        assert m is not None and m.data == b"parent"
