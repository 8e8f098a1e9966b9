# SPDX-License-Identifier: MIT
"""Publish and receive through a real pubd: payloads, views, timeouts, iteration, transports."""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import pytest

import pub


def test_round_trip_bytes(client: pub.Client) -> None:
    client.subscribe("t.round")
    client.publish("t.round", b"hello", sync=True)
    m = client.recv(timeout=10)
    assert m is not None
    assert (m.group, m.data) == ("t.round", b"hello")
    assert isinstance(m.data, bytes)
    # Through this same pubd: its source id, or on the direct path (the
    # default on shared memory) this publisher's own for the group.
    assert m.source != 0
    client.publish("t.round", b"", sync=True)
    m2 = client.recv(timeout=10)
    assert m2 is not None and m2.data == b"" and m2.seq == m.seq + 1
    assert m2.source == m.source


def test_large_multi_fragment(client: pub.Client) -> None:
    info = client.info()
    payload = os.urandom(200 * 1024)
    assert len(payload) > info.mtu, "the message must need several datagrams"
    client.subscribe("t.big")
    client.publish("t.big", payload, sync=True)
    m = client.recv(timeout=10)
    assert m is not None and m.group == "t.big"
    assert len(m.data) == len(payload) and m.data == payload


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "readonly-view", "slice"])
def test_publish_buffer_kinds(client: pub.Client, kind: str) -> None:
    raw = os.urandom(3000)
    data = {
        "bytes": raw,
        "bytearray": bytearray(raw),
        "memoryview": memoryview(bytearray(raw)),
        "readonly-view": memoryview(raw),
        "slice": memoryview(bytearray(b"xx" + raw + b"yy"))[2:-2],
    }[kind]
    client.subscribe("t.views")
    client.publish("t.views", data, sync=True)
    m = client.recv(timeout=10)
    assert m is not None and m.data == raw


def test_recv_copy_false_is_a_readonly_view_released_at_next_recv(client: pub.Client) -> None:
    client.subscribe("t.views")
    first, second = os.urandom(100_000), os.urandom(10)
    client.publish("t.views", first)
    client.publish("t.views", second, sync=True)
    m = client.recv(timeout=10, copy=False)
    assert m is not None
    assert isinstance(m.data, memoryview) and m.data.readonly
    assert m.data.nbytes == len(first) and m.data == first and bytes(m.data) == first
    with pytest.raises(TypeError):
        m.data[0] = 1  # type: ignore[index]
    m2 = client.recv(timeout=10, copy=False)
    assert m2 is not None and m2.data == second
    with pytest.raises(ValueError):
        bytes(m.data)  # libpub has reused that buffer: the old view is released
    client.close()
    with pytest.raises(ValueError):
        m2.data.tobytes()  # close releases the last one


def test_timeout_returns_none_within_bounds(client: pub.Client) -> None:
    client.subscribe("t.misc")
    start = time.monotonic()
    assert client.recv(timeout=0.3) is None
    took = time.monotonic() - start
    assert 0.3 <= took < 2.0, f"recv(0.3) took {took:.3f} s"
    start = time.monotonic()
    assert client.recv(timeout=0) is None
    assert time.monotonic() - start < 1.0
    with pytest.raises(ValueError):
        client.recv(timeout=-1)
    with pytest.raises(TypeError):
        client.recv(timeout="1")  # type: ignore[arg-type]
    client.publish("t.misc", b"forever", sync=True)
    m = client.recv(timeout=math.inf)  # inf: wait as long as it takes
    assert m is not None and m.data == b"forever"


def test_iteration_with_a_publisher_thread(pubd, client: pub.Client) -> None:
    client.subscribe("t.iter")
    count = 50

    def publish() -> None:
        with pub.Client(pubd.socket, client_name="pytest-publisher") as p:
            for i in range(count):
                p.publish("t.iter", i.to_bytes(4, "little"))
            p.flush()
            p.publish("t.iter", b"end", sync=True)

    t = threading.Thread(target=publish)
    t.start()
    got = []
    for msg in client:  # blocking, while the other thread publishes (the GIL is released)
        if msg.data == b"end":
            break
        got.append(int.from_bytes(msg.data, "little"))
    t.join()
    assert got == list(range(count))


def test_claim_commit_writes_in_place(client: pub.Client) -> None:
    payload = os.urandom(5000)
    client.subscribe("t.misc")
    buf = client.claim("t.misc", len(payload))
    assert isinstance(buf, memoryview) and not buf.readonly and buf.nbytes == len(payload)
    buf[:] = payload
    client.commit(sync=True)
    with pytest.raises(ValueError):
        buf[0] = 0  # the claim's view is released at commit
    m = client.recv(timeout=10)
    assert m is not None and m.data == payload


def _publish_log_bytes(c: pub.Client, client_id: int) -> int:
    rows = [r for r in c.query("clients") if r["id"] == client_id]
    assert len(rows) == 1
    return rows[0]["publish_log"]


@pytest.mark.parametrize("transport", ["shm", "socket"])
def test_both_transports(pubd, transport: str) -> None:
    with pub.Client(pubd.socket, transport=transport, client_name=f"pytest-{transport}") as c:
        c.subscribe("t.round")
        payloads = [os.urandom(n) for n in (1, 1000, 70_000)]
        for p in payloads:
            c.publish("t.round", p)
        c.publish("t.round", b"last", sync=True)
        got = [c.recv(timeout=10) for _ in range(len(payloads) + 1)]
        assert [m.data for m in got if m is not None] == payloads + [b"last"]
        # pubd's clients table says which way this client publishes.
        log_bytes = _publish_log_bytes(c, c.info().client_id)
        if transport == "socket":
            assert log_bytes == 0
        else:
            assert log_bytes > 0


@pytest.mark.parametrize("linger", [0, 0.0001, 1])
def test_recv_linger_receives_and_times_out(pubd, linger: float) -> None:
    # A lingering recv still gets what comes, and still keeps its timeout.
    with pub.Client(pubd.socket, transport="shm", recv_linger=linger) as c:
        c.subscribe("t.round")
        c.publish("t.round", b"x", sync=True)
        m = c.recv(timeout=10)
        assert m is not None and m.data == b"x"
        t0 = time.monotonic()
        assert c.recv(timeout=0.05) is None
        assert time.monotonic() - t0 < 5


def test_recv_linger_option_is_checked(pubd) -> None:
    for bad in (-1, 2, "soon"):
        with pytest.raises(ValueError, match="recv_linger"):
            pub.Client(pubd.socket, recv_linger=bad)


def test_transport_option_is_checked(pubd) -> None:
    with pytest.raises(ValueError, match="transport"):
        pub.Client(pubd.socket, transport="carrier-pigeon")


class _Interrupted(Exception):
    pass


def test_blocking_recv_lets_signal_handlers_run(client: pub.Client) -> None:
    """Ctrl-C (any Python signal handler) interrupts recv() without a timeout."""
    client.subscribe("t.misc")

    def handler(signum: int, frame: object) -> None:
        raise _Interrupted()

    old = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(_Interrupted):
            client.recv()
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, old)
    assert time.monotonic() - start < 5.0
    client.publish("t.misc", b"still usable", sync=True)
    m = client.recv(timeout=10)
    assert m is not None and m.data == b"still usable"


@pytest.mark.parametrize("pub_transport", ["shm", "socket"])
def test_unsubscribe_counts_what_it_never_read(pubd, pub_transport: str) -> None:
    """A subscriber that leaves with messages unread in shared memory: each
    one pubd counted delivered to it either comes back from recv after the
    unsubscribe or is counted dropped for it (sub_disconnect), never neither.
    From a publisher on shared memory the subscriber reads its direct log;
    from one on the socket, the group log pubd writes."""
    group, n, read = f"t.unsub.{pub_transport}", 400, 50
    with pub.Client(pubd.socket, transport=pub_transport, client_name="unsub-pub") as p, pub.Client(
        pubd.socket, client_name="unsub-sub"
    ) as s:
        s.subscribe(group)
        for i in range(n):
            p.publish(group, i.to_bytes(4, "little") * 16, sync=(i == n - 1))
        for i in range(read):
            m = s.recv(timeout=10)
            assert m is not None and m.data[:4] == i.to_bytes(4, "little")
        s.unsubscribe(group)
        after = 0
        while s.recv(timeout=0) is not None:
            after += 1
        me = s.info().client_id
        row = [r for r in p.query("clients") if r["id"] == me][0]
        print(f"{pub_transport}: read {read} + {after} after unsubscribing; pubd: delivered {row['delivered']}, "
              f"dropped {row['dropped']}")
        assert row["delivered"] == read + after
        assert row["delivered"] + row["dropped"] == n
