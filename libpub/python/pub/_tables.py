# SPDX-License-Identifier: MIT
"""pub_query's tables as Python lists of dicts, and which query holds which table."""

from __future__ import annotations

import ctypes
from typing import Any

from . import _lib

# The queries pubd answers (pubctl's commands) and the tables of each reply.
QUERIES: dict[str, int] = {
    "status": _lib.PUB_Q_STATUS,
    "groups": _lib.PUB_Q_GROUPS,
    "group": _lib.PUB_Q_GROUP,
    "clients": _lib.PUB_Q_CLIENTS,
    "drops": _lib.PUB_Q_DROPS,
    "sources": _lib.PUB_Q_SOURCES,
    "reload": _lib.PUB_Q_RELOAD,
    "metrics": _lib.PUB_Q_METRICS,
}

# Table name -> the query whose reply carries it (without a group argument).
TABLE_QUERY: dict[str, str] = {
    "status": "status",
    "fabric": "status",
    "counters": "status",
    "groups": "groups",
    "clients": "clients",
    "drops": "drops",
    "sources": "sources",
    "group": "group",
    "subscribers": "group",
    "publishers": "group",
    "metrics": "metrics",
}

# Tables only the per-group query has (they need its group argument).
GROUP_TABLES = frozenset({"group", "subscribers", "publishers"})

Row = dict[str, Any]


def _cell(v: _lib.pub_value, raw: bool = False) -> int | str | bytes:
    if v.type == _lib.PUB_VALUE_U64:
        return int(v.u)
    if v.type == _lib.PUB_VALUE_I64:
        return int(v.i)
    if v.type == _lib.PUB_VALUE_STR:
        b = ctypes.string_at(v.s, v.len) if v.len else b""
        return b if raw else b.decode("utf-8", "replace")
    raise ValueError(f"pubd sent a cell of unknown type {v.type}")


def convert(t: _lib.pub_table, raw: bool = False) -> tuple[str, list[Row]]:
    """One struct pub_table (valid only during the callback) as (name, rows).

    ``raw``: strings as ``bytes`` (pieces of a text that may cut a character in two).
    """
    name = (t.name or b"").decode("utf-8", "replace")
    cols = [(t.cols[i].name or b"").decode("utf-8", "replace") for i in range(t.ncols)]
    rows: list[Row] = []
    k = 0
    for _ in range(t.nrows):
        row: Row = {}
        for col in cols:
            row[col] = _cell(t.cells[k], raw)
            k += 1
        rows.append(row)
    return name, rows
