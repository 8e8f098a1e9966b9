# SPDX-License-Identifier: MIT
"""Errors as exceptions with libpub's code and text; closing; version and constants."""

from __future__ import annotations

import errno
import math
import re
import socket
from pathlib import Path

import pytest

import pub
from conftest import MAX_MESSAGE, REPO


def test_unknown_group(client: pub.Client) -> None:
    with pytest.raises(pub.NoSuchGroup) as e:
        client.subscribe("no.such.group")
    err = e.value
    assert isinstance(err, pub.Error) and isinstance(err, LookupError)
    assert err.code == pub.PUB_ENOGROUP and err.name == "PUB_ENOGROUP"
    assert "no.such.group" in str(err) and err.message == str(err)
    assert err.description == pub.strerror(pub.PUB_ENOGROUP)
    with pytest.raises(pub.NoSuchGroup):
        client.publish("no.such.group", b"x", sync=True)


def test_deferred_publish_error_comes_back(client: pub.Client) -> None:
    client.publish("no.such.group", b"x")  # fast path: pubd's verdict comes later
    # A sync publish confirms every earlier message; the error is raised by it or the flush.
    with pytest.raises(pub.NoSuchGroup):
        client.publish("t.err", b"y", sync=True)
        client.flush(0)


def test_acl_denial(client: pub.Client) -> None:
    with pytest.raises(pub.PermissionDenied) as e:
        client.subscribe("secret")
    assert isinstance(e.value, PermissionError)
    assert e.value.code == pub.PUB_EACL and "secret" in str(e.value)
    with pytest.raises(pub.PermissionDenied):
        client.publish("secret", b"x", sync=True)


def test_too_large(client: pub.Client) -> None:
    with pytest.raises(pub.MessageTooLarge) as e:
        client.publish("t.err", bytes(MAX_MESSAGE + 1), sync=True)
    assert e.value.code == pub.PUB_ETOOLARGE and isinstance(e.value, ValueError)


def test_unreachable_socket(tmp_path: Path) -> None:
    missing = tmp_path / "nobody.sock"
    with pytest.raises(pub.Unreachable) as e:
        pub.Client(missing)
    assert isinstance(e.value, ConnectionError) and isinstance(e.value, pub.Error)
    assert e.value.code == errno.ENOENT and e.value.name == "ENOENT"
    assert e.value.errno == errno.ENOENT and str(e.value)
    # A socket file no one listens on.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(tmp_path / "deaf.sock"))
    try:
        with pytest.raises(pub.Unreachable) as e2:
            pub.Client(tmp_path / "deaf.sock")
        assert e2.value.code == errno.ECONNREFUSED
    finally:
        s.close()


def test_bad_arguments(client: pub.Client) -> None:
    with pytest.raises(ValueError, match="group"):
        client.subscribe("")
    with pytest.raises(ValueError, match="group"):
        client.publish("x" * 256, b"")
    with pytest.raises(TypeError, match="data"):
        client.publish("t.err", "text is not bytes")  # type: ignore[arg-type]


def test_context_manager_closes(pubd) -> None:
    with pub.Client(pubd.socket, client_name="pytest-ctx") as c:
        assert not c.closed
        me = c.info().client_id
    assert c.closed
    with pytest.raises(pub.Unreachable) as e:
        c.publish("t.misc", b"x")
    assert e.value.code == errno.ENOTCONN
    c.close()  # twice is harmless
    # pubd sees the connection go (asynchronously: poll, bounded).
    with pub.Client(pubd.socket, client_name="pytest-watch") as w:
        for _ in range(200):
            if all(r["id"] != me for r in w.query("clients")):
                break
            w.recv(timeout=0.05)  # the poll interval
        else:
            pytest.fail("pubd still lists the closed client")


def _header() -> str:
    return (REPO / "libpub" / "include" / "pub.h").read_text()


def test_version_matches_header() -> None:
    m = re.search(r'#define PUB_VERSION_STRING "([^"]+)"', _header())
    assert m and pub.version() == m.group(1)


def test_error_constants_match_header() -> None:
    codes = dict(re.findall(r"\b(PUB_E[A-Z]+) = (\d+),", _header()))
    assert codes, "pub.h's enum pub_error not found"
    for name, value in codes.items():
        if name == "PUB_EBASE":
            continue
        assert getattr(pub, name) == int(value), name
        assert pub.error_name(-int(value)) == name


@pytest.mark.parametrize("size", [2**64, 2**64 + 5, 2**65 + 2**62])
def test_claim_size_beyond_size_t_raises(client: pub.Client, size: int) -> None:
    # ctypes would cut it to 64 bits: 2**64 + 5 became a claim of 5 bytes.
    with pytest.raises(pub.MessageTooLarge) as e:
        client.claim("t.err", size)
    assert e.value.code == pub.PUB_ETOOLARGE and str(size) in str(e.value)
    with pytest.raises(pub.MessageTooLarge):
        client.claim("t.err", 2**62)  # libpub's own answer, for comparison
    client.publish("t.err", b"no claim is open", sync=True)


def test_timeouts_beyond_a_c_int_raise(pubd, client: pub.Client) -> None:
    too_long = (2**31) / 1000  # seconds: one ms more than libpub's int holds
    with pytest.raises(OverflowError, match="timeout"):
        client.flush(timeout=too_long)
    client.flush(timeout=(2**31 - 1) / 1000)
    for kw in ("connect_timeout", "request_timeout"):
        with pytest.raises(OverflowError, match=kw):
            pub.Client(pubd.socket, **{kw: 1e300})
    with pub.Client(pubd.socket, connect_timeout=math.inf, request_timeout=math.inf) as c:
        c.subscribe("t.err")
        c.publish("t.err", b"m", sync=True)
        # recv waits in slices: any timeout is kept, none is cut.
        m = c.recv(timeout=1e12)
        assert m is not None and m.data == b"m"


def test_strerror_code_beyond_a_c_int_raises() -> None:
    assert pub.strerror(-pub.PUB_EACL) == pub.strerror(pub.PUB_EACL)
    with pytest.raises(OverflowError):
        pub.strerror(2**32 + pub.PUB_EACL)  # was PUB_EACL's text
