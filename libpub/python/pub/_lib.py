# SPDX-License-Identifier: MIT
"""ctypes declarations of libpub's C API (libpub/include/pub.h), one to one.

Nothing here is public: the package's ``Client`` wraps it. Every function
gets its exact ``argtypes`` and ``restype``, so a wrong argument fails in
Python with a TypeError rather than in C. ctypes releases the GIL for the
duration of each call, so a thread blocked in ``pub_recv`` does not stop
the others.

The library is ``libpub.so.1`` (its SONAME: the ABI this module was written
for), or the file named by ``$PUB_LIBRARY`` (tests use the build tree's).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)

LIBRARY_ENV = "PUB_LIBRARY"
LIBRARY_DEFAULT = "libpub.so.1"

# pub.h's constants (kept in step by tests/python: a mismatch fails there).
PUB_EBASE = 2000
PUB_ERRORS = {
    2001: "PUB_EPROTO",
    2002: "PUB_EVERSION",
    2003: "PUB_EACL",
    2004: "PUB_ENOGROUP",
    2005: "PUB_ETOOLARGE",
    2006: "PUB_ESTATE",
    2007: "PUB_EINTERNAL",
    2008: "PUB_EBADQUERY",
    2009: "PUB_ECONFIG",
    2010: "PUB_ESLOW",
    2011: "PUB_ESHUTDOWN",
    2012: "PUB_EREMADE",
    2013: "PUB_EPARTIAL",
    2014: "PUB_EBUSY",
    2099: "PUB_EUNKNOWN",
}
PUB_EPROTO = 2001
PUB_EVERSION = 2002
PUB_EACL = 2003
PUB_ENOGROUP = 2004
PUB_ETOOLARGE = 2005
PUB_ESTATE = 2006
PUB_EINTERNAL = 2007
PUB_EBADQUERY = 2008
PUB_ECONFIG = 2009
PUB_ESLOW = 2010
PUB_ESHUTDOWN = 2011
PUB_EREMADE = 2012
PUB_EPARTIAL = 2013
PUB_EBUSY = 2014
PUB_EUNKNOWN = 2099

PUB_GROUP_MAX = 255

PUB_OPT_NO_RECONNECT = 0x1
PUB_OPT_BUSY_POLL = 0x2

PUB_TRANSPORT_DEFAULT = 0
PUB_TRANSPORT_SHM = 1
PUB_TRANSPORT_SOCKET = 2

PUB_NONBLOCK = 0x1
PUB_SYNC = 0x2
PUB_MORE = 0x4

PUB_Q_STATUS = 1
PUB_Q_GROUPS = 2
PUB_Q_GROUP = 3
PUB_Q_CLIENTS = 4
PUB_Q_DROPS = 5
PUB_Q_SOURCES = 6
PUB_Q_RELOAD = 7
PUB_Q_METRICS = 8

PUB_VALUE_U64 = 1
PUB_VALUE_I64 = 2
PUB_VALUE_STR = 3


class pub_options(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("client_name", c_char_p),
        ("connect_timeout_ms", c_int),
        ("request_timeout_ms", c_int),
        ("reconnect_min_ms", c_int),
        ("reconnect_max_ms", c_int),
        ("flags", c_uint),
        ("transport", c_int),
        ("recv_linger_us", c_int),
    ]


class pub_info(Structure):
    _fields_ = [
        ("max_message", c_uint32),
        ("mtu", c_uint32),
        ("client_id", c_uint32),
        ("source_id", c_uint64),
        ("daemon_version", c_char * 256),
        ("fabric", c_char * 256),
        ("reconnects", c_uint64),
        ("connected", c_int),
        ("reserved", c_uint32 * 15),
    ]


class pub_message(Structure):
    _fields_ = [
        ("group", c_char_p),
        ("source", c_uint64),
        ("seq", c_uint64),
        ("data", c_void_p),
        ("len", c_size_t),
    ]


class pub_column(Structure):
    _fields_ = [("name", c_char_p), ("type", c_int)]


class pub_value(Structure):
    _fields_ = [
        ("type", c_int),
        ("u", c_uint64),
        ("i", c_int64),
        ("s", c_void_p),  # not c_char_p: strings may hold NUL bytes; len says how long
        ("len", c_size_t),
    ]


class pub_table(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("ncols", c_uint),
        ("cols", POINTER(pub_column)),
        ("nrows", c_size_t),
        ("cells", POINTER(pub_value)),
    ]


# int (*pub_table_cb)(const struct pub_table *t, void *arg)
pub_table_cb = CFUNCTYPE(c_int, POINTER(pub_table), c_void_p)

# The opaque handle: a pointer only ever passed back.
pub_client_p = c_void_p

# (name, restype, argtypes), as pub.h declares them.
_PROTOTYPES = [
    ("pub_version", c_char_p, []),
    ("pub_connect", c_int, [POINTER(pub_client_p), c_char_p, POINTER(pub_options)]),
    ("pub_close", None, [pub_client_p]),
    ("pub_subscribe", c_int, [pub_client_p, c_char_p]),
    ("pub_unsubscribe", c_int, [pub_client_p, c_char_p]),
    ("pub_publish", c_int, [pub_client_p, c_char_p, c_void_p, c_size_t, c_int]),
    ("pub_claim", c_int, [pub_client_p, c_char_p, c_size_t, POINTER(c_void_p)]),
    ("pub_commit", c_int, [pub_client_p, c_int]),
    ("pub_flush", c_int, [pub_client_p, c_int]),
    ("pub_recv", c_int, [pub_client_p, POINTER(pub_message), c_int]),
    ("pub_fd", c_int, [pub_client_p]),
    ("pub_info", c_int, [pub_client_p, POINTER(pub_info)]),
    ("pub_query", c_int, [pub_client_p, c_int, c_char_p, pub_table_cb, c_void_p]),
    ("pub_strerror", c_char_p, [c_int]),
    ("pub_errmsg", c_char_p, [pub_client_p]),
]


# Functions of a later symbol version (PUB_1.1) than the SONAME's first.
_OPTIONAL = {"pub_claim", "pub_commit"}


def library_path() -> str:
    """The library this process loads: ``$PUB_LIBRARY`` if set, else ``libpub.so.1``."""
    return os.environ.get(LIBRARY_ENV) or LIBRARY_DEFAULT


def load(path: str | None = None) -> ctypes.CDLL:
    """Load libpub and declare every function's prototype.

    Raises OSError naming the file and ``$PUB_LIBRARY`` when it cannot be loaded.
    """
    path = path or library_path()
    try:
        lib = ctypes.CDLL(path, use_errno=False)
    except OSError as e:
        raise OSError(
            f"cannot load libpub from {path!r} ({e}); install libpub1, or set "
            f"${LIBRARY_ENV} to the path of libpub.so.1"
        ) from e
    for name, restype, argtypes in _PROTOTYPES:
        try:
            fn = getattr(lib, name)
        except AttributeError:
            # pub_claim/pub_commit came with PUB_1.1; an older libpub.so.1 lacks them.
            if name in _OPTIONAL:
                continue
            raise
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
