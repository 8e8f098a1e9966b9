# SPDX-License-Identifier: MIT
"""fileno() in an event loop: selectors and asyncio's add_reader, with recv(timeout=0)."""

from __future__ import annotations

import asyncio
import selectors

import pub


def _drain(c: pub.Client, into: list[bytes]) -> None:
    while (m := c.recv(timeout=0)) is not None:
        into.append(m.data)


def test_fileno_with_selectors(pubd, client: pub.Client) -> None:
    client.subscribe("t.sel")
    fd = client.fileno()
    assert fd >= 0 and fd == client.fileno()  # stable for the client's life
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    got: list[bytes] = []
    want = [b"one", b"two", b"three"]
    with pub.Client(pubd.socket, client_name="pytest-sel-pub") as p:
        for w in want:
            p.publish("t.sel", w, sync=True)
    rounds = 0
    while len(got) < len(want):
        events = sel.select(timeout=10)
        assert events, f"no readiness within 10 s; got {got}"
        _drain(client, got)
        rounds += 1
        assert rounds < 1000
    sel.close()
    assert got == want


def test_fileno_with_asyncio_add_reader(pubd, client: pub.Client) -> None:
    client.subscribe("t.aio")
    want = [f"m{i}".encode() for i in range(10)]

    async def main() -> list[bytes]:
        loop = asyncio.get_running_loop()
        got: list[bytes] = []
        done = loop.create_future()

        def readable() -> None:
            _drain(client, got)
            if len(got) >= len(want) and not done.done():
                done.set_result(None)

        loop.add_reader(client.fileno(), readable)
        try:
            with pub.Client(pubd.socket, client_name="pytest-aio-pub") as p:
                for w in want:
                    await loop.run_in_executor(None, lambda w=w: p.publish("t.aio", w, sync=True))
            await asyncio.wait_for(done, 10)
        finally:
            loop.remove_reader(client.fileno())
        return got

    assert asyncio.run(main()) == want
