# SPDX-License-Identifier: MIT
"""pub.Client: one connection to the local pubd (a libpub handle)."""

from __future__ import annotations

import ctypes
import errno
import math
import os
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Iterator, Optional, Union

from . import _lib, _tables
from ._errors import Error, MessageTooLarge, make_error

Buffer = Union[bytes, bytearray, memoryview]

# A blocking recv waits in slices this long, so Ctrl-C (a Python signal
# handler, which runs only between C calls) and other threads' calls on the
# same client get their turn. A slice that ends empty costs one poll().
_SLICE_MS = 100
_INT_MAX = 2**31 - 1  # libpub's timeouts are C ints of milliseconds
_SIZE_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1
_TRANSPORTS = {
    None: _lib.PUB_TRANSPORT_DEFAULT,
    "shm": _lib.PUB_TRANSPORT_SHM,
    "socket": _lib.PUB_TRANSPORT_SOCKET,
}

_lib_handle: Optional[ctypes.CDLL] = None  # set by the package once libpub is loaded


def _libpub() -> ctypes.CDLL:
    assert _lib_handle is not None
    return _lib_handle


# Every open Client, so that a fork()ed child can make their locks anew: a
# lock another thread of the parent held at the fork (a thread blocked in
# recv() holds it for up to _SLICE_MS at a time) would stay held for ever in
# the child, where that thread does not exist, and close() would deadlock.
_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for c in list(_clients):
        c._lock = threading.Lock()
        c._forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Handle:
    """A libpub handle, closed (``pub_close``) by ``close()`` or once nothing refers to it.

    The Client refers to it, and so does the memory object under every view
    of libpub's memory it hands out (``recv(copy=False)``, ``claim()``):
    however long a slice of such a view lives, the handle (and the memory
    under the slice) is not freed under it.
    """

    __slots__ = ("lib", "ptr")

    def __init__(self, lib: ctypes.CDLL, ptr: int) -> None:
        self.lib = lib
        self.ptr: Optional[int] = ptr

    def close(self) -> None:
        ptr, self.ptr = self.ptr, None
        if ptr is not None:
            self.lib.pub_close(ptr)

    def __del__(self) -> None:
        self.close()


# sys.getrefcount of a view's memory object in Client._free when no view
# of it is left: the attribute, the local variable, getrefcount's argument.
_FREE_REFS = 3


@dataclass(frozen=True, slots=True)
class Message:
    """A received message.

    Attributes:
        group: the group it was published to.
        source: the publishing daemon's source id (pubd's ``sources`` table).
        seq: its sequence number, per source and group.
        data: the payload: ``bytes``; or, from ``recv(copy=False)``, a
            read-only ``memoryview`` onto libpub's buffer that is valid only
            until the next ``recv()`` (or ``close()``) on the same client, which
            releases it (using it then raises ``ValueError``). Slices of it,
            ``memoryview(data)``, ``data.obj`` or a buffer taken of it (numpy,
            ``ctypes.from_buffer``) are not released: while one is alive the
            next ``recv()`` raises ``BufferError`` (libpub would reuse the
            memory under it) and ``close()`` leaves the connection open until
            the last one is gone. Copy what you keep (``bytes(data[a:b])``).
    """

    group: str
    source: int
    seq: int
    data: Union[bytes, memoryview]


@dataclass(frozen=True, slots=True)
class Info:
    """What pubd told the client when it (last) connected (``pub_info``)."""

    max_message: int
    mtu: int
    client_id: int
    source_id: int
    daemon_version: str
    fabric: str
    reconnects: int
    connected: bool


def _seconds(seconds: float, what: str) -> float:
    """A timeout in seconds, checked: a number >= 0 (``math.inf``: forever)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds):
        raise TypeError(f"{what}: expected seconds as a number or None, got {seconds!r}")
    if seconds < 0:
        raise ValueError(f"{what}: expected seconds >= 0, got {seconds!r}")
    return seconds


def _ms(seconds: Optional[float], what: str, none_ms: int) -> int:
    """Seconds as libpub's milliseconds: None -> none_ms, inf -> -1 (forever).

    Raises OverflowError above what libpub's C int of milliseconds holds
    (2**31 - 1 ms, 24.8 days) rather than pass on a wrapped or cut value.
    """
    if seconds is None:
        return none_ms
    if math.isinf(_seconds(seconds, what)):
        return -1
    ms = math.ceil(seconds * 1000)
    if ms > _INT_MAX:
        raise OverflowError(
            f"{what}: {seconds!r} s is above libpub's longest timeout, {_INT_MAX / 1000} s "
            "(math.inf waits for ever)"
        )
    return ms


def _group_arg(group: Union[str, bytes]) -> bytes:
    raw = group.encode("utf-8") if isinstance(group, str) else group
    if not isinstance(raw, bytes):
        raise TypeError(f"group: expected str or bytes, got {type(group).__name__}")
    if not 1 <= len(raw) <= _lib.PUB_GROUP_MAX or b"\0" in raw:
        raise ValueError(f"group: expected 1..{_lib.PUB_GROUP_MAX} bytes without NUL, got {group!r}")
    return raw


def _payload(data: Buffer) -> tuple[object, int]:
    """A pointer-able object for pub_publish's data, without a copy where possible."""
    if isinstance(data, bytes):
        return data, len(data)
    try:
        mv = memoryview(data)
    except TypeError:
        raise TypeError(f"data: expected bytes, bytearray or memoryview, got {type(data).__name__}") from None
    if not mv.c_contiguous:
        raise ValueError("data: expected a C-contiguous buffer")
    if mv.nbytes == 0:
        return None, 0
    if mv.readonly:
        # ctypes can point only into writable buffers (or bytes): copy.
        return mv.tobytes(), mv.nbytes
    return (ctypes.c_char * mv.nbytes).from_buffer(mv), mv.nbytes


def _default_name() -> str:
    # sys.argv[0] is "-c" under `python3 -c`, "" in the interactive interpreter.
    prog = os.path.basename(sys.argv[0]) if sys.argv else ""
    return prog if prog and not prog.startswith("-") else "python"


class Client:
    """One connection to the local pubd.

    ``Client(socket)`` connects at once (raising ``pub.Unreachable`` when
    pubd is not there, or its subclass ``pub.SocketDenied`` when the
    socket's permissions refuse this user); use it as a context manager or call ``close()``.
    When pubd restarts, the client reconnects and resubscribes by itself
    (unless ``reconnect=False``); messages in flight then are lost.

    A client is safe to share between threads (its calls are serialised by
    a lock), but one client per thread is faster: a thread blocked in
    ``recv()`` holds the client for up to 0.1 s at a time.

    After ``os.fork()`` a client belongs to the parent: the child may only
    ``close()`` it (or let it be collected); other calls raise ``pub.Error``.

    Args:
        socket: pubd's Unix socket; None: ``$PUBD_SOCKET``, else
            ``/run/pubd/pubd.sock``.
        transport: ``"shm"`` (shared-memory logs, where pubd offers them),
            ``"socket"`` (every message through the socket), or None:
            ``$PUBD_TRANSPORT``, else shared memory.
        client_name: shown by ``pubctl clients`` (default: the script's name).
        connect_timeout: seconds to keep trying while pubd is not up yet
            (0: one attempt; ``math.inf``: forever).
        request_timeout: seconds to wait for pubd's answer to subscribe,
            query or a sync publish (None: libpub's 10 s; ``math.inf``: forever).
            Finite timeouts above 2**31 - 1 ms (24.8 days) raise
            ``OverflowError``, here and in ``flush()``.
        reconnect: reconnect by itself when the connection drops (else
            calls fail with ``pub.Unreachable``).
        busy_poll: recv spins instead of sleeping (lowest latency, a core at 100%).
        recv_linger: seconds recv looks again (yielding the CPU) before it
            sleeps, so an answer that comes meanwhile costs no wakeup (at
            most 1; 0: sleep at once; None: ``$PUBD_RECV_LINGER_US``
            microseconds if set, else 0).
    """

    def __init__(
        self,
        socket: Union[str, "os.PathLike[str]", None] = None,
        *,
        transport: Optional[str] = None,
        client_name: Optional[str] = None,
        connect_timeout: float = 0,
        request_timeout: Optional[float] = None,
        reconnect: bool = True,
        busy_poll: bool = False,
        recv_linger: Optional[float] = None,
    ) -> None:
        self._lib = _libpub()
        self._handle: Optional[int] = None
        self._lock = threading.Lock()
        self._forked = False  # inherited across fork(): only close() is allowed (pub.h)
        self._msg = _lib.pub_message()
        self._hobj: Optional[_Handle] = None
        # The last zero-copy data (released at the next recv) and the open
        # claim's view (released at commit), with the memory objects under
        # them: those stay referenced while any slice of the views lives.
        self._view: Optional[memoryview] = None
        self._view_base: Optional[ctypes.Array] = None
        self._claim: Optional[memoryview] = None
        self._claim_base: Optional[ctypes.Array] = None
        if transport not in _TRANSPORTS:
            raise ValueError(f"transport: expected 'shm', 'socket' or None, got {transport!r}")
        opts = _lib.pub_options()
        opts.struct_size = ctypes.sizeof(opts)
        name = (client_name if client_name is not None else _default_name()).encode("utf-8")
        opts.client_name = name
        opts.connect_timeout_ms = _ms(connect_timeout, "connect_timeout", 0)
        opts.request_timeout_ms = _ms(request_timeout, "request_timeout", 0)
        if opts.request_timeout_ms == 0 and request_timeout is not None:
            opts.request_timeout_ms = 1  # 0 would mean libpub's default, not "at once"
        opts.flags = (0 if reconnect else _lib.PUB_OPT_NO_RECONNECT) | (
            _lib.PUB_OPT_BUSY_POLL if busy_poll else 0
        )
        opts.transport = _TRANSPORTS[transport]
        if recv_linger is not None:
            if not isinstance(recv_linger, (int, float)) or not 0 <= recv_linger <= 1:
                raise ValueError(f"recv_linger: expected seconds from 0 to 1, got {recv_linger!r}")
            us = round(recv_linger * 1e6)
            opts.recv_linger_us = us if us > 0 else -1  # -1: at once, whatever the environment says
        path = os.fsencode(socket) if socket is not None else None
        # The path libpub uses (pub_connect's rule), for repr() and messages.
        self.socket: str = os.fsdecode(path) if path is not None else (
            os.environ.get("PUBD_SOCKET") or "/run/pubd/pubd.sock"
        )
        handle = _lib.pub_client_p()
        r = self._lib.pub_connect(ctypes.byref(handle), path, ctypes.byref(opts))
        if r < 0:
            # pub_errmsg(NULL) is per thread, and this thread made the call.
            raise make_error(r, self._lib.pub_errmsg(None).decode("utf-8", "replace"), connecting=True)
        self._handle = handle.value
        self._hobj = _Handle(self._lib, handle.value)
        self._fd = self._lib.pub_fd(self._handle)  # one descriptor for the handle's life
        _clients.add(self)

    # ---- life ----

    def close(self) -> None:
        """Close the connection. Safe to call twice; later calls raise ``pub.Error`` (ENOTCONN).

        In a child of ``os.fork()``, a client inherited from the parent may
        only be closed (which closes the child's copies; the parent's
        connection goes on): every other call raises ``pub.Error``
        (``EINVAL``). This holds even when another thread of the parent was
        inside a call at the fork.

        If a slice (or other view) of a ``recv(copy=False)`` message or of a
        ``claim()`` is still alive, the client is closed all the same (later
        calls raise), but libpub's handle and connection stay open until the
        last such view is gone, so the memory under it stays valid (a
        ``ResourceWarning`` says so).
        """
        with self._lock:
            free = self._free("_view") & self._free("_claim")
            h, self._hobj, self._handle = self._hobj, None, None
            self._view_base = self._claim_base = None
            if h is not None:
                if free:
                    h.close()
                else:  # the last view's going closes it (_Handle.__del__)
                    warnings.warn(
                        "pub.Client.close(): a slice or other view of a zero-copy message or claim "
                        "is still alive; the connection is closed when the last one is gone",
                        ResourceWarning,
                        stacklevel=2,
                    )

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran."""
        return self._handle is None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_hobj", None) is not None:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"fd {self._fd}"
        return f"<pub.Client socket={self.socket!r} {state}>"

    # ---- helpers (called with the lock held) ----

    def _h(self) -> int:
        if self._handle is None:
            raise make_error(-errno.ENOTCONN, "the client is closed")
        if self._forked:
            raise Error(-errno.EINVAL, "this client was inherited across fork(): the child may only close() it")
        return self._handle

    def _check(self, r: int) -> int:
        if r < 0:
            raise make_error(r, self._lib.pub_errmsg(self._handle).decode("utf-8", "replace"))
        return r

    def _make_view(self, ptr: int, size: int, readonly: bool) -> tuple[memoryview, ctypes.Array]:
        """A memoryview of libpub's memory, and the memory object under it.

        Every view made from the one returned (slices, ``memoryview(v)``,
        ``v.cast()``) shares its buffer, which holds one reference to the
        memory object until all those views are released or gone; and the
        memory object holds the handle (``_Handle``), so it is not closed
        while any of them lives. ``_free`` counts those references.
        """
        base = (ctypes.c_char * size).from_address(ptr)
        base._pub_handle = self._hobj  # type: ignore[attr-defined]
        view = memoryview(base).cast("B")  # bytes-like: v[:] = b"..." works
        return (view.toreadonly() if readonly else view), base

    def _free(self, kind: str) -> bool:
        """Release the view ``kind`` (``"_view"``/``"_claim"``) handed out.

        True if no view of its memory is left (or there was none); False if
        a slice, another view or an export of it lives on (the memory object
        then stays in ``kind + "_base"``, so the next call looks again).
        """
        view = getattr(self, kind)
        if view is not None:
            setattr(self, kind, None)
            try:
                view.release()
            except BufferError:
                pass  # a buffer was taken of the view itself: its memory object stays referenced
            del view
        base = getattr(self, kind + "_base")
        if base is None:
            return True
        if sys.getrefcount(base) > _FREE_REFS:
            return False
        setattr(self, kind + "_base", None)
        return True

    # ---- groups and publishing ----

    def subscribe(self, group: Union[str, bytes]) -> None:
        """Receive the messages of ``group``; waits for pubd's answer.

        Raises ``pub.NoSuchGroup``, ``pub.PermissionDenied``, ``pub.Timeout``...
        """
        g = _group_arg(group)
        with self._lock:
            self._check(self._lib.pub_subscribe(self._h(), g))

    def unsubscribe(self, group: Union[str, bytes]) -> None:
        """Stop receiving ``group`` (messages on their way may still arrive)."""
        g = _group_arg(group)
        with self._lock:
            self._check(self._lib.pub_unsubscribe(self._h(), g))

    def publish(
        self,
        group: Union[str, bytes],
        data: Buffer,
        *,
        sync: bool = False,
        more: bool = False,
        nonblock: bool = False,
    ) -> None:
        """Publish one message (up to ``info().max_message`` bytes) to ``group``.

        Without ``sync`` it returns once the message is handed to pubd; an
        error pubd reports about it (an ACL denial, an unknown group) is
        raised by a later call (publish, flush, recv). ``sync=True`` waits for
        pubd's verdict on this and every earlier message. ``more=True``: more
        follow at once, so small messages may be gathered (end the burst with
        a publish without it or with ``flush()``). ``nonblock=True`` raises
        ``pub.WouldBlock`` instead of waiting for room.

        ``bytes`` and writable buffers are passed without a copy; a read-only
        ``memoryview`` (e.g. a received zero-copy message) is copied first.
        """
        g = _group_arg(group)
        ptr, n = _payload(data)
        flags = (
            (_lib.PUB_SYNC if sync else 0)
            | (_lib.PUB_MORE if more else 0)
            | (_lib.PUB_NONBLOCK if nonblock else 0)
        )
        with self._lock:
            self._check(self._lib.pub_publish(self._h(), g, ptr, n, flags))

    def flush(self, timeout: Optional[float] = None) -> None:
        """Write out what ``more``/``nonblock`` publishes left in the client.

        Also raises any error pubd already reported about earlier messages.
        ``timeout``: seconds to wait for room (None: forever; 0: do not wait),
        after which ``pub.WouldBlock``/``pub.Timeout`` says something is left.
        """
        ms = _ms(timeout, "timeout", -1)
        with self._lock:
            self._check(self._lib.pub_flush(self._h(), ms))

    def claim(self, group: Union[str, bytes], size: int) -> memoryview:
        """Room for a message of ``size`` bytes, written in place, then ``commit()``.

        Returns a writable ``memoryview`` of exactly ``size`` bytes (inside the
        shared-memory publish log when it fits one record: no copy at all).
        Fill it, then call ``commit()``, which releases the view (using it
        then raises ``ValueError``). No other call on this client until then.

        Slices of the view (``v[a:b]``, ``memoryview(v)``, ``v.obj``, a
        buffer taken of it) point into the same memory: drop them before
        ``commit()``, which otherwise raises ``BufferError`` and leaves the
        claim open (``del`` them and commit again). Writing into a slice
        assignment (``v[a:b] = data``, ``struct.pack_into(fmt, v, ...)``)
        leaves nothing behind.
        """
        g = _group_arg(group)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"size: expected an int >= 0, got {size!r}")
        if size > _SIZE_MAX:  # ctypes would pass it on cut to 64 bits
            raise MessageTooLarge(
                -_lib.PUB_ETOOLARGE, f"claim {g.decode('utf-8', 'replace')!r}: {size} bytes is more than a size_t holds"
            )
        if not hasattr(self._lib, "pub_claim") or self._lib.pub_claim.argtypes is None:
            raise Error(-errno.ENOSYS, "this libpub.so.1 has no pub_claim (before PUB_1.1)")
        ptr = ctypes.c_void_p()
        with self._lock:
            h = self._h()
            # With a claim open (its view not yet released), libpub answers EBUSY: keep the view.
            if self._claim is None and not self._free("_claim"):
                raise BufferError("claim(): a view of the last claim is still alive; drop it first")
            self._check(self._lib.pub_claim(h, g, size, ctypes.byref(ptr)))
            if size:
                view, self._claim_base = self._make_view(ptr.value, size, readonly=False)
            else:
                view = memoryview(bytearray())
            self._claim = view
            return view

    def commit(self, *, sync: bool = False, more: bool = False) -> None:
        """Publish the message of the open ``claim()`` (flags as ``publish``).

        Releases the claim's view. Raises ``BufferError`` without publishing
        if a slice or other view of it is still alive (the claim stays open:
        drop them and call ``commit()`` again).
        """
        flags = (_lib.PUB_SYNC if sync else 0) | (_lib.PUB_MORE if more else 0)
        with self._lock:
            h = self._h()
            if not self._free("_claim"):
                raise BufferError(
                    "commit(): a slice or other view of the claimed buffer is still alive; "
                    "the claim stays open: drop them (del) and commit() again"
                )
            self._check(self._lib.pub_commit(h, flags))

    # ---- receiving ----

    def recv(self, timeout: Optional[float] = None, *, copy: bool = True) -> Optional[Message]:
        """The next message of a subscribed group, or None after ``timeout`` seconds.

        ``timeout``: None (or ``math.inf``) waits for ever; 0 takes only what is already there
        (the non-blocking take for a ``selectors``/asyncio loop on
        ``fileno()``). ``copy=False`` gives ``data`` as a read-only
        ``memoryview`` onto libpub's buffer instead of ``bytes``: no copy,
        valid until the next ``recv()``/``close()``, which releases it. A
        slice or other view of it still alive then makes the next ``recv()``
        raise ``BufferError`` (see ``Message.data``).

        Raises ``pub.Error`` for what pubd reported (e.g. ``pub.SlowSubscriber``
        or a refused earlier publish); the client stays usable.
        """
        # No C int here: the wait is cut in slices, so any timeout is kept exactly.
        total = math.inf if timeout is None else _seconds(timeout, "timeout")
        deadline = None if math.isinf(total) else time.monotonic() + total
        lib, msg = self._lib, self._msg
        while True:
            ms = _SLICE_MS
            if deadline is not None:
                ms = min(ms, max(0, math.ceil((deadline - time.monotonic()) * 1000)))
            with self._lock:
                h = self._h()
                if not self._free("_view"):
                    raise BufferError(
                        "recv(): a slice or other view of the last recv(copy=False) message is "
                        "still alive, and libpub would reuse its memory: copy what you keep "
                        "(bytes(view)) and drop the views"
                    )
                r = self._check(lib.pub_recv(h, ctypes.byref(msg), ms))
                if r == 1:
                    return self._message(msg, copy)
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _message(self, msg: _lib.pub_message, copy: bool) -> Message:
        data: Union[bytes, memoryview]
        if copy:
            data = ctypes.string_at(msg.data, msg.len) if msg.len else b""
        elif msg.len:
            data, self._view_base = self._make_view(msg.data, msg.len, readonly=True)
            self._view = data
        else:
            data = memoryview(b"")
        group = (msg.group or b"").decode("utf-8", "replace")
        return Message(group, int(msg.source), int(msg.seq), data)

    def __iter__(self) -> Iterator[Message]:
        """Messages, as they come (blocking): ``for msg in client: ...``."""
        while True:
            m = self.recv()
            if m is not None:
                yield m

    def fileno(self) -> int:
        """A descriptor that polls readable when ``recv(timeout=0)`` may have work.

        Register it with ``selectors`` or ``loop.add_reader()``, then call
        ``recv(0)`` until it returns None. It stays the same across
        reconnects. Do not read or close it.
        """
        self._h()  # raises once closed
        return self._fd

    # ---- the daemon ----

    def info(self) -> Info:
        """What pubd said when this client (last) connected."""
        i = _lib.pub_info()
        with self._lock:
            self._check(self._lib.pub_info(self._h(), ctypes.byref(i)))
        return Info(
            max_message=i.max_message,
            mtu=i.mtu,
            client_id=i.client_id,
            source_id=i.source_id,
            daemon_version=i.daemon_version.decode("utf-8", "replace"),
            fabric=i.fabric.decode("utf-8", "replace"),
            reconnects=i.reconnects,
            connected=bool(i.connected),
        )

    def query_all(self, query: str, group: Optional[str] = None, *, raw: bool = False) -> dict[str, list[dict]]:
        """Every table of one of pubd's queries, by table name: what pubctl shows.

        ``query``: ``"status"`` (tables status, fabric, counters), ``"groups"``,
        ``"group"`` (needs ``group``; tables group, subscribers, publishers,
        sources), ``"clients"``, ``"drops"``, ``"sources"``, ``"reload"`` (no
        tables), ``"metrics"`` (table metrics: pieces of the Prometheus text,
        see ``metrics()``). Values are ``int`` or ``str`` as pubd typed them
        (``raw=True``: strings as ``bytes``). A table pubd cut short is named
        in a table ``"more"`` (table, rows_not_shown).
        """
        kind = _tables.QUERIES.get(query)
        if kind is None:
            raise ValueError(f"query: expected one of {', '.join(_tables.QUERIES)}, got {query!r}")
        if (kind == _lib.PUB_Q_GROUP) != (group is not None):
            raise ValueError("query 'group' needs group=NAME, and only it takes one")
        arg = _group_arg(group) if group is not None else None
        tables: dict[str, list[dict]] = {}
        failure: list[BaseException] = []

        def on_table(t: "ctypes._Pointer[_lib.pub_table]", _arg: Optional[int]) -> int:
            try:
                name, rows = _tables.convert(t.contents, raw)
                tables[name] = rows
                return 0
            except BaseException as e:  # noqa: BLE001 - must not unwind through C
                failure.append(e)
                return 1

        cb = _lib.pub_table_cb(on_table)
        with self._lock:
            r = self._lib.pub_query(self._h(), kind, arg, cb, None)
            if failure:
                raise failure[0]
            self._check(r)
        return tables

    def query(self, table: str, group: Optional[str] = None) -> list[dict]:
        """The rows of one of pubd's tables, each a dict of column -> int or str.

        ``table``: ``status``, ``fabric``, ``counters``, ``groups``,
        ``clients``, ``drops``, ``sources``; with ``group=NAME`` also
        ``group``, ``subscribers``, ``publishers`` and that group's
        ``sources``; ``metrics`` (rows of pieces: ``metrics()`` joins them). E.g. ``c.query("groups")`` ->
        ``[{"name": "prices", "subscribers": 1, ...}, ...]``.
        """
        query = "group" if group is not None else _tables.TABLE_QUERY.get(table)
        if query is None or (table in _tables.GROUP_TABLES and group is None):
            known = ", ".join(t for t in _tables.TABLE_QUERY if t not in _tables.GROUP_TABLES)
            raise ValueError(
                f"table: expected one of {known} (or group, subscribers, publishers, "
                f"sources with group=NAME), got {table!r}"
            )
        tables = self.query_all(query, group)
        if table not in tables:
            raise Error(-_lib.PUB_EPROTO, f"pubd's {query} reply has no table {table!r}")
        return tables[table]

    # The loss-repair columns of pubd's groups table (0 on groups without repair).
    REPAIR_COLUMNS = (
        "repair",
        "repaired",
        "unrecovered",
        "naks_sent",
        "naks_received",
        "repairs_sent",
        "repair_bytes",
        "gone_sent",
        "naks_ignored_duplicate",
        "naks_ignored_rate",
        "naks_ignored_outside",
        "naks_ignored_token",
        "naks_ignored_peer",
        "naks_ignored_unproven",
        "cookies_sent",
        "gone_ignored",
    )

    def repair_stats(self, group: str) -> dict[str, int]:
        """One group's loss-repair counters, as ``pubctl group NAME`` shows them.

        ``repaired`` (messages got back by NAK), ``unrecovered`` (lost
        although NAKed), ``naks_sent`` / ``naks_received``, the source
        side's ``repairs_sent``, ``repair_bytes``, ``gone_sent`` and the
        ``naks_ignored_*`` reasons, ``gone_ignored``; ``repair`` is 1 while
        the group keeps a repair window. Columns this pubd does not have are
        left out. Raises ``pub.Error`` for an unknown group.
        """
        row = self.query("group", group=group)[0]
        return {k: row[k] for k in self.REPAIR_COLUMNS if k in row}

    def metrics(self) -> str:
        """pubd's Prometheus metrics, the text ``metrics.listen`` serves on
        ``/metrics`` (``pubctl metrics``).

        pubd sends it in pieces (the rows of its ``metrics`` table, which may
        cut a character in two); this joins them. Raises ``pub.Error``
        (``PUB_EBADQUERY``) from a pubd without the query.
        """
        tables = self.query_all("metrics", raw=True)
        pieces = tables.get("metrics", [])
        return b"".join(row["text"] for row in pieces if isinstance(row.get("text"), bytes)).decode(
            "utf-8", "replace"
        )

    def reload(self) -> None:
        """Ask pubd to re-read its configuration (as SIGHUP does).

        Raises ``pub.Error`` with code ``PUB_ECONFIG`` and pubd's list of
        errors when the new configuration is rejected.
        """
        self.query_all("reload")
