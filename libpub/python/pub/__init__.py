# SPDX-License-Identifier: MIT
"""pub: publish and subscribe through the local pubd, from Python.

A binding of libpub (``libpub.so.1``, loaded with ctypes; ``$PUB_LIBRARY``
names another file, e.g. a build tree's)::

    import pub

    with pub.Client() as c:                   # $PUBD_SOCKET or /run/pubd/pubd.sock
        c.subscribe("prices")
        c.publish("prices", b"42.0", sync=True)
        msg = c.recv(timeout=1.0)             # a pub.Message, or None
        print(msg.group, msg.source, msg.seq, msg.data)
        print(c.query("groups"))              # [{"name": "prices", ...}]

Zero copy: ``recv(copy=False)`` and ``claim()`` hand out memoryviews of
libpub's own memory (its receive buffer, the shared-memory publish log). The
binding releases them at the next ``recv()``, at ``commit()`` and at
``close()`` (using one then raises ``ValueError``), but it cannot release a
slice of them, a ``memoryview()`` or ``cast()`` of them, their ``.obj``, or
a buffer another library took of them (numpy, ctypes). While any of those
lives, the binding keeps the memory under it valid: the next ``recv()``
(after a zero-copy message) or ``commit()`` raises ``BufferError`` instead
of letting libpub reuse it, and ``close()`` (or collecting the client)
leaves libpub's handle open until the last one is gone. So no Python code
can reach freed memory through them; but keep slices short-lived (or copy:
``bytes(view[a:b])``), or the next call fails.

Errors are ``pub.Error`` (with ``code``, ``name``, ``message``) or one of
its subclasses: ``pub.Unreachable`` (and its ``pub.SocketDenied``,
``pub.ConnectTimeout``), ``pub.PermissionDenied``, ``pub.NoSuchGroup``,
``pub.MessageTooLarge``, ``pub.Timeout``, ``pub.WouldBlock``,
``pub.SlowSubscriber``, ``pub.ClaimOpen``, ``pub.ConfigError``; which code
is raised as which is in ``help(pub._errors)``. Every failure of
``pub.Client()`` but ``PUB_EVERSION`` is a ``pub.Unreachable``, as pubctl
exits 2 for it.
"""

from __future__ import annotations

from . import _client, _errors, _lib
from ._client import Client, Info, Message
from ._errors import (
    ClaimOpen,
    ConfigError,
    ConnectTimeout,
    Error,
    MessageTooLarge,
    NoSuchGroup,
    PermissionDenied,
    SlowSubscriber,
    SocketDenied,
    Timeout,
    Unreachable,
    WouldBlock,
    error_name,
)
from ._lib import (
    PUB_EACL,
    PUB_EBADQUERY,
    PUB_EBUSY,
    PUB_ECONFIG,
    PUB_EINTERNAL,
    PUB_ENOGROUP,
    PUB_EPARTIAL,
    PUB_EPROTO,
    PUB_EREMADE,
    PUB_ESHUTDOWN,
    PUB_ESLOW,
    PUB_ESTATE,
    PUB_ETOOLARGE,
    PUB_EUNKNOWN,
    PUB_EVERSION,
    PUB_GROUP_MAX,
)

_libpub = _lib.load()
_client._lib_handle = _libpub
_errors._lib_handle = _libpub

#: The file libpub was loaded from (``$PUB_LIBRARY``, else ``libpub.so.1``).
library = _lib.library_path()


def version() -> str:
    """The loaded libpub's version, ``"MAJOR.MINOR.PATCH"`` (``pub_version``)."""
    return _libpub.pub_version().decode("ascii")


def strerror(code: int) -> str:
    """libpub's text for an error code, negative or positive (``pub_strerror``).

    Raises OverflowError for a code outside a C int (ctypes would wrap it).
    """
    if not -(2**31) < code < 2**31:
        raise OverflowError(f"code: {code} is outside a C int")
    return _libpub.pub_strerror(code).decode("utf-8", "replace")


__all__ = [
    "Client",
    "Message",
    "Info",
    "Error",
    "Unreachable",
    "PermissionDenied",
    "NoSuchGroup",
    "MessageTooLarge",
    "Timeout",
    "WouldBlock",
    "SlowSubscriber",
    "SocketDenied",
    "ConnectTimeout",
    "ClaimOpen",
    "ConfigError",
    "error_name",
    "strerror",
    "version",
    "library",
    "PUB_EPROTO",
    "PUB_EVERSION",
    "PUB_EACL",
    "PUB_ENOGROUP",
    "PUB_ETOOLARGE",
    "PUB_ESTATE",
    "PUB_EINTERNAL",
    "PUB_EBADQUERY",
    "PUB_ECONFIG",
    "PUB_ESLOW",
    "PUB_ESHUTDOWN",
    "PUB_EREMADE",
    "PUB_EPARTIAL",
    "PUB_EBUSY",
    "PUB_EUNKNOWN",
    "PUB_GROUP_MAX",
]
