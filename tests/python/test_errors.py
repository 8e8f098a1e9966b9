# SPDX-License-Identifier: MIT
"""Errors as exceptions with libpub's code and text; closing; version and constants."""

from __future__ import annotations

import errno
import math
import os
import re
import socket
import subprocess
import sys
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


# Every code libpub returns, and the class it is raised as (_errors.py's table).
ERROR_CLASSES = {
    errno.ENOENT: pub.Unreachable,
    errno.ECONNREFUSED: pub.Unreachable,
    errno.ECONNRESET: pub.Unreachable,
    errno.ECONNABORTED: pub.Unreachable,
    errno.ENOTCONN: pub.Unreachable,
    errno.EPIPE: pub.Unreachable,
    pub.PUB_ESHUTDOWN: pub.Unreachable,
    errno.EACCES: pub.SocketDenied,
    errno.EPERM: pub.SocketDenied,
    errno.ETIMEDOUT: pub.Timeout,
    errno.EAGAIN: pub.WouldBlock,
    errno.EBUSY: pub.ClaimOpen,
    pub.PUB_EACL: pub.PermissionDenied,
    pub.PUB_ENOGROUP: pub.NoSuchGroup,
    pub.PUB_ETOOLARGE: pub.MessageTooLarge,
    pub.PUB_ESLOW: pub.SlowSubscriber,
    pub.PUB_ECONFIG: pub.ConfigError,
    pub.PUB_EPARTIAL: pub.ConfigError,
    errno.EINVAL: pub.Error,
    errno.ENOMEM: pub.Error,
    errno.EPROTO: pub.Error,
    pub.PUB_EPROTO: pub.Error,
    pub.PUB_EVERSION: pub.Error,
    pub.PUB_ESTATE: pub.Error,
    pub.PUB_EINTERNAL: pub.Error,
    pub.PUB_EBADQUERY: pub.Error,
    pub.PUB_EREMADE: pub.Error,
    pub.PUB_EBUSY: pub.Error,
    pub.PUB_EUNKNOWN: pub.Error,
}


@pytest.mark.parametrize("code", list(ERROR_CLASSES), ids=pub.error_name)
def test_every_code_has_its_class(code: int) -> None:
    from pub._errors import make_error

    e = make_error(-code, "m")
    assert type(e) is ERROR_CLASSES[code] and e.code == code and str(e) == "m"
    if isinstance(e, OSError) and code < 2000:
        assert e.errno == code
    # pub_connect's failures: all but PUB_EVERSION mean pubd cannot be reached (pubctl's exit 2).
    c = make_error(-code, "m", connecting=True)
    assert isinstance(c, pub.Unreachable) == (code != pub.PUB_EVERSION and not issubclass(
        ERROR_CLASSES[code], (pub.PermissionDenied, pub.NoSuchGroup, pub.MessageTooLarge, pub.WouldBlock,
                              pub.ClaimOpen, pub.SlowSubscriber, pub.ConfigError)))
    if code == errno.ETIMEDOUT:
        assert type(c) is pub.ConnectTimeout and isinstance(c, pub.Timeout)


def test_every_pub_code_is_in_the_table() -> None:
    codes = {int(v) for n, v in re.findall(r"\b(PUB_E[A-Z]+) = (\d+),", _header()) if n != "PUB_EBASE"}
    assert codes <= set(ERROR_CLASSES)


def test_publish_while_a_claim_is_open(client: pub.Client) -> None:
    v = client.claim("t.err", 3)
    v[:] = b"abc"
    with pytest.raises(pub.ClaimOpen, match="claim is open") as e:
        client.publish("t.err", b"x")
    assert e.value.code == errno.EBUSY and e.value.name == "EBUSY"
    with pytest.raises(pub.ClaimOpen):
        client.claim("t.err", 3)
    v[0:1] = b"A"  # the open claim's view is still usable
    client.subscribe("t.err")
    client.commit(sync=True)
    m = client.recv(timeout=10)
    assert m is not None and m.data == b"Abc"
    client.publish("t.err", b"x", sync=True)


def test_connect_timeout_is_unreachable(tmp_path: Path) -> None:
    # A socket that takes the connection (the kernel's backlog) and never answers.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(tmp_path / "mute.sock"))
    s.listen(4)
    try:
        with pytest.raises(pub.ConnectTimeout) as e:
            pub.Client(tmp_path / "mute.sock", request_timeout=0.2)
        assert isinstance(e.value, pub.Unreachable) and isinstance(e.value, pub.Timeout)
        assert e.value.code == errno.ETIMEDOUT
    finally:
        s.close()


def _denied_socket(tmp_path: Path) -> tuple[socket.socket, Path]:
    """A listening socket this test's user (or, as root, nobody) may not connect to."""
    d = tmp_path / "run"
    d.mkdir()
    d.chmod(0o755)
    tmp_path.chmod(0o755)
    path = d / "pubd.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(4)
    path.chmod(0o600 if os.geteuid() == 0 else 0o000)
    return s, path


_DENIED = """
import sys
try:
    import pub
except BaseException as e:
    print("cannot import pub:", e); sys.exit(77)
try:
    pub.Client(sys.argv[1])
except pub.Error as e:
    print(type(e).__name__, e.name, isinstance(e, pub.Unreachable), isinstance(e, PermissionError), e.errno)
"""


def test_socket_permissions_are_unreachable(tmp_path: Path) -> None:
    s, path = _denied_socket(tmp_path)
    try:
        if os.geteuid() != 0:
            with pytest.raises(pub.SocketDenied) as e:
                pub.Client(path)
            assert isinstance(e.value, pub.Unreachable) and isinstance(e.value, PermissionError)
            assert e.value.code == errno.EACCES and e.value.errno == errno.EACCES
            return
        # root passes any permission: ask as nobody.
        try:
            r = subprocess.run(
                [sys.executable, "-c", _DENIED, str(path)], capture_output=True, text=True, user=65534, timeout=60
            )
        except OSError as e:  # e.g. an interpreter under /root
            pytest.skip(f"nobody cannot run {sys.executable}: {e}")
        if r.returncode == 77:
            pytest.skip(f"nobody cannot load the binding here: {r.stdout.strip()}")
        assert r.stdout.split() == ["SocketDenied", "EACCES", "True", "True", str(errno.EACCES)], r.stderr
        # The example publisher exits 2 for it, as pubctl does.
        r = subprocess.run(
            [sys.executable, str(REPO / "libpub" / "python" / "examples" / "publisher.py"), "t.err", "--socket", str(path)],
            capture_output=True, text=True, user=65534, timeout=60,
        )
        assert r.returncode == 2 and "EACCES" in r.stderr, r.stderr
    finally:
        s.close()
