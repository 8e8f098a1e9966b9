# SPDX-License-Identifier: MIT
"""Zero-copy views (recv(copy=False), claim()): no view outlives the memory under it.

Slices and other views of what the binding hands out share its memory: the
binding cannot release them, so it refuses to let libpub reuse or free that
memory while one is alive (BufferError from recv/commit; close() leaves the
connection open until the last one goes). Python code must never crash the
interpreter: the crashing cases run in a child interpreter.
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import pub
from conftest import REPO


def _run(pubd, script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PUBD_SOCKET=pubd.socket)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "libpub" / "python"), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-W", "ignore::ResourceWarning", "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_commit_refuses_while_a_slice_of_the_claim_lives(client: pub.Client) -> None:
    client.subscribe("t.views")
    v = client.claim("t.views", 8)
    s = v[2:6]
    v[:] = b"abcdefgh"
    s[:] = b"WXYZ"
    with pytest.raises(BufferError, match="claim stays open"):
        client.commit(sync=True)
    with pytest.raises(ValueError):
        v[0]  # the view handed out is released all the same
    del s
    client.commit(sync=True)
    m = client.recv(timeout=10)
    assert m is not None and m.data == b"abWXYZgh"


@pytest.mark.parametrize("how", ["memoryview", "obj", "cast", "from_buffer"])
def test_every_kind_of_derived_view_is_seen(client: pub.Client, how: str) -> None:
    v = client.claim("t.views", 16)
    v[:] = bytes(16)
    keep: object
    if how == "memoryview":
        keep = memoryview(v)
    elif how == "obj":
        keep = v.obj
    elif how == "cast":
        keep = v.cast("I")
    else:
        keep = (ctypes.c_char * 16).from_buffer(v)  # an export of the view itself
    with pytest.raises(BufferError):
        client.commit()
    del keep
    client.commit(sync=True)


def test_recv_refuses_while_a_slice_of_the_last_message_lives(client: pub.Client) -> None:
    client.subscribe("t.views")
    client.publish("t.views", b"first message", sync=True)
    client.publish("t.views", b"second", sync=True)
    m = client.recv(timeout=10, copy=False)
    assert m is not None
    s = m.data[0:5]
    with pytest.raises(BufferError, match="copy what you keep"):
        client.recv(timeout=10)
    assert bytes(s) == b"first"  # still the first message's bytes
    with pytest.raises(ValueError):
        bytes(m.data)  # the view handed out is released
    del s
    m2 = client.recv(timeout=10, copy=False)
    assert m2 is not None and bytes(m2.data) == b"second"
    kept = bytes(m2.data[0:3])  # a copy keeps nothing alive
    assert client.recv(timeout=0) is None and kept == b"sec"


def test_a_slice_of_a_claim_survives_commit_and_close(pubd) -> None:
    # The audit's reproduction: wrote through a slice into unmapped memory (rc 139).
    r = _run(
        pubd,
        """
        import pub, gc
        n = 1 << 16
        c = pub.Client()
        v = c.claim("t.views", n)
        s = v[0:n]
        v[:] = b"a" * n
        try:
            c.commit(sync=True)
        except BufferError:
            print("commit refused")
        c.close(); del c; gc.collect()
        s[:] = b"Z" * n
        assert bytes(s) == b"Z" * n
        del s; gc.collect()
        x = [bytes(1000) for _ in range(10000)]
        print("survived")
        """,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "commit refused\nsurvived\n"


@pytest.mark.parametrize("n", [100, 500_000])
@pytest.mark.parametrize("how", ["slice", "memoryview", "cast"])
def test_a_slice_of_a_message_survives_close(pubd, n: int, how: str) -> None:
    r = _run(
        pubd,
        f"""
        import pub, gc
        n = {n}
        c = pub.Client()
        c.subscribe("t.views")
        c.publish("t.views", b"x" * n, sync=True)
        m = c.recv(10.0, copy=False)
        s = {{"slice": lambda d: d[0:n], "memoryview": memoryview, "cast": lambda d: d.cast("c")}}["{how}"](m.data)
        c.close(); del c; gc.collect()
        junk = [bytes(n) for _ in range(20)]
        assert bytes(s) == b"x" * n, "changed under the view"
        print("survived")
        """,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "survived\n"


def test_the_connection_closes_when_the_last_view_goes(pubd) -> None:
    def listed(me: int) -> bool:
        with pub.Client(pubd.socket, client_name="pytest-watch") as w:
            for _ in range(200):
                if not any(r["id"] == me for r in w.query("clients")):
                    return False
                w.recv(timeout=0.05)  # the poll interval
            return True

    c = pub.Client(pubd.socket, client_name="pytest-views")
    me = c.info().client_id
    v = c.claim("t.views", 4)
    s = v[1:3]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c.close()
    assert c.closed and any(issubclass(x.category, ResourceWarning) for x in w)
    with pytest.raises(pub.Unreachable):
        c.publish("t.views", b"x")
    s[:] = b"ok"  # still mapped
    with pub.Client(pubd.socket, client_name="pytest-watch") as watch:
        assert any(r["id"] == me for r in watch.query("clients"))
    del v, s
    gc.collect()
    assert not listed(me)
