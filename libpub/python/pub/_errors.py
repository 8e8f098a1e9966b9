# SPDX-License-Identifier: MIT
"""pub.Error and its subclasses: libpub's negative return codes as exceptions.

Every code libpub returns, and the class it is raised as (each a subclass
of ``pub.Error``, and of the builtin exception named)::

    ENOENT, ECONNREFUSED, ECONNRESET,     Unreachable (ConnectionError)
      ECONNABORTED, ENOTCONN, EPIPE,
      PUB_ESHUTDOWN
    EACCES, EPERM (pubd's socket          SocketDenied (Unreachable,
      refuses this user)                    PermissionError)
    ETIMEDOUT                             Timeout (TimeoutError); from
                                            pub.Client(): ConnectTimeout
                                            (Timeout and Unreachable)
    EAGAIN                                WouldBlock (BlockingIOError)
    EBUSY (a claim is open)               ClaimOpen
    PUB_EACL                              PermissionDenied (PermissionError)
    PUB_ENOGROUP                          NoSuchGroup (LookupError)
    PUB_ETOOLARGE                         MessageTooLarge (ValueError)
    PUB_ESLOW                             SlowSubscriber
    PUB_ECONFIG, PUB_EPARTIAL (reload)    ConfigError
    anything else: EINVAL, ENOMEM,        Error
      EPROTO, PUB_EPROTO, PUB_EVERSION,
      PUB_ESTATE, PUB_EINTERNAL,
      PUB_EBADQUERY, PUB_EREMADE, PUB_EBUSY,
      PUB_EUNKNOWN, other errno values

``pub.Client()`` follows ``pubctl`` (exit status 2, "pubd cannot be
reached"): every failure to connect but ``PUB_EVERSION`` (pubd speaks
another protocol) is an ``Unreachable``, whatever its code (e.g. EMFILE,
ENAMETOOLONG for the socket's path). An errno code is also in ``errno``
of the exceptions that are ``OSError`` subclasses.
"""

from __future__ import annotations

import errno as _errno

from . import _lib


class Error(Exception):
    """An error libpub returned.

    Attributes:
        code: the error code, positive: an errno value (``errno.ENOENT``) or
            a ``PUB_E...`` code for what pubd refused (``pub.PUB_EACL``).
        name: the code's name, ``"ENOENT"`` or ``"PUB_EACL"`` (``"E?"`` if unknown).
        description: libpub's generic text for the code (``pub_strerror``).
        message: what went wrong, with its context and pubd's own words when
            it gave some (``pub_errmsg``); also ``str(error)``.
    """

    code: int
    name: str
    description: str
    message: str

    def __init__(self, code: int, message: str = "", description: str = "") -> None:
        code = abs(code)
        self.code = code
        self.name = error_name(code)
        self.description = description or _strerror(code)
        self.message = message or self.description
        super().__init__(self.message)
        if code < _lib.PUB_EBASE and isinstance(self, OSError):
            self.errno = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}: {self.message!r})"


class PermissionDenied(Error, PermissionError):
    """A group's ACL denies this uid/gid (``PUB_EACL``)."""


class NoSuchGroup(Error, LookupError):
    """The group is not in pubd's configuration (``PUB_ENOGROUP``)."""


class MessageTooLarge(Error, ValueError):
    """Above pubd's max_message_size, or a raw group's MTU (``PUB_ETOOLARGE``)."""


class Unreachable(Error, ConnectionError):
    """pubd cannot be reached, or the connection is down (ENOENT, ECONNREFUSED, ENOTCONN...)."""


class Timeout(Error, TimeoutError):
    """pubd did not answer in time (ETIMEDOUT)."""


class WouldBlock(Error, BlockingIOError):
    """No room now for a non-blocking publish (EAGAIN)."""


class SlowSubscriber(Error):
    """pubd dropped this client as a slow subscriber; the client has reconnected (``PUB_ESLOW``)."""


class SocketDenied(Unreachable, PermissionError):
    """pubd's socket (or its directory) refuses this user (EACCES, EPERM): pubd cannot be reached."""


class ConnectTimeout(Timeout, Unreachable):
    """``pub.Client()``: pubd took the connection but did not answer in time (ETIMEDOUT)."""


class ClaimOpen(Error):
    """A ``claim()`` is open: ``commit()`` it before publishing or claiming again (EBUSY)."""


class ConfigError(Error):
    """``reload()``: pubd rejected its new configuration (``PUB_ECONFIG``), or applied only part of it
    (``PUB_EPARTIAL``); the message lists pubd's reasons."""


_CLASSES: dict[int, type[Error]] = {
    _lib.PUB_EACL: PermissionDenied,
    _lib.PUB_ENOGROUP: NoSuchGroup,
    _lib.PUB_ETOOLARGE: MessageTooLarge,
    _lib.PUB_ESLOW: SlowSubscriber,
    _lib.PUB_ESHUTDOWN: Unreachable,
    _errno.ENOENT: Unreachable,
    _errno.ECONNREFUSED: Unreachable,
    _errno.ECONNRESET: Unreachable,
    _errno.ENOTCONN: Unreachable,
    _errno.EPIPE: Unreachable,
    _errno.ECONNABORTED: Unreachable,
    _errno.EACCES: SocketDenied,
    _errno.EPERM: SocketDenied,
    _errno.ETIMEDOUT: Timeout,
    _errno.EAGAIN: WouldBlock,
    _errno.EBUSY: ClaimOpen,
    _lib.PUB_ECONFIG: ConfigError,
    _lib.PUB_EPARTIAL: ConfigError,
}

_lib_handle = None  # set by the package once libpub is loaded


def _strerror(code: int) -> str:
    if _lib_handle is None or code >= 2**31:
        return error_name(code)
    return _lib_handle.pub_strerror(code).decode("utf-8", "replace")


def error_name(code: int) -> str:
    """The symbolic name of an error code (positive or negative): ``"PUB_EACL"``, ``"ENOENT"``."""
    code = abs(code)
    if code >= _lib.PUB_EBASE:
        return _lib.PUB_ERRORS.get(code, "PUB_EUNKNOWN")
    return _errno.errorcode.get(code, "E?")


def make_error(code: int, message: str = "", connecting: bool = False) -> Error:
    """The exception for libpub's return value ``code`` (negative or positive).

    ``connecting``: ``pub_connect``'s, where every failure but PUB_EVERSION
    means pubd cannot be reached (pubctl's exit status 2).
    """
    code = abs(code)
    cls = _CLASSES.get(code, Error)
    if connecting:
        if cls is Timeout:
            cls = ConnectTimeout
        elif cls is Error and code != _lib.PUB_EVERSION:
            cls = Unreachable
    return cls(code, message)
