# SPDX-License-Identifier: MIT
"""query(): pubd's tables (what pubctl shows) as lists of dicts with typed values."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

import pub
from conftest import GROUPS


def test_groups_table(client: pub.Client) -> None:
    client.subscribe("t.misc")
    rows = client.query("groups")
    by_name = {r["name"]: r for r in rows}
    assert set(GROUPS + ["secret"]) <= set(by_name)
    g = by_name["t.misc"]
    assert isinstance(g["address"], str) and g["address"].startswith("239.")
    assert isinstance(g["subscribers"], int) and g["subscribers"] >= 1
    assert g["joined"] == 1
    before = g["published"]
    client.publish("t.misc", b"count me", sync=True)
    after = {r["name"]: r for r in client.query("groups")}["t.misc"]["published"]
    assert after == before + 1


def test_clients_table(pubd, client: pub.Client) -> None:
    client.subscribe("t.round")
    client.subscribe("t.misc")
    me = client.info().client_id
    rows = [r for r in client.query("clients") if r["id"] == me]
    assert len(rows) == 1
    row = rows[0]
    assert row["name"] == "pytest"
    assert row["pid"] == os.getpid() and row["uid"] == os.getuid()
    assert set(row["subscriptions"].split(",")) == {"t.round", "t.misc"}


def test_status_and_other_tables(client: pub.Client) -> None:
    tables = client.query_all("status")
    assert {"status", "fabric", "counters"} <= set(tables)
    status = tables["status"][0]
    assert status["version"] == pub.version()
    assert status["fabric"] == "udp"
    assert isinstance(status["pid"], int) and status["pid"] > 0
    assert all(isinstance(r["value"], int) for r in client.query("counters"))
    assert isinstance(client.query("drops"), list)
    assert isinstance(client.query("sources"), list)
    group = client.query_all("group", group="t.misc")
    assert group["group"][0]["name"] == "t.misc"
    assert "subscribers" in group and "publishers" in group
    assert client.query("subscribers", group="t.misc") == group["subscribers"]


def test_repair_stats(client: pub.Client) -> None:
    plain = client.repair_stats("t.misc")
    assert set(plain) == set(pub.Client.REPAIR_COLUMNS)
    assert all(isinstance(v, int) for v in plain.values())
    assert plain["repair"] == 0 and plain["repaired"] == 0 and plain["unrecovered"] == 0
    client.publish("t.views", b"kept for repair", sync=True)
    deadline = time.monotonic() + 5
    while client.repair_stats("t.views")["repair"] != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    st = client.repair_stats("t.views")
    assert st["repair"] == 1  # the source keeps a window for it
    assert st["naks_received"] == 0 and st["naks_ignored_token"] == 0
    rows = {r["name"]: r for r in client.query("groups")}
    assert rows["t.views"]["repaired"] == st["repaired"]
    with pytest.raises(pub.Error):
        client.repair_stats("no.such.group")


def test_bad_queries(client: pub.Client) -> None:
    with pytest.raises(ValueError, match="table"):
        client.query("nonsense")
    with pytest.raises(ValueError):
        client.query("subscribers")  # needs group=
    with pytest.raises(pub.NoSuchGroup) as e:
        client.query("group", group="no.such.group")
    assert e.value.code == pub.PUB_ENOGROUP


def test_metrics_is_the_prometheus_text(pubd, client: pub.Client) -> None:
    text = client.metrics()
    assert isinstance(text, str) and text.endswith("\n")
    lines = text.splitlines()
    assert any(ln.startswith("# TYPE ") for ln in lines) and any(ln.startswith("# HELP ") for ln in lines)
    samples = [ln for ln in lines if ln and not ln.startswith("#")]
    assert samples and all(len(ln.rsplit(" ", 1)) == 2 for ln in samples)
    # Every metric name pubctl prints, the binding gets too.
    pubctl = os.path.join(os.path.dirname(os.path.dirname(os.environ.get("PUBD", ""))), "cli", "pubctl")
    if os.access(pubctl, os.X_OK):
        r = subprocess.run([pubctl, "-s", pubd.socket, "metrics"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        names = lambda t: {ln.split()[2] for ln in t.splitlines() if ln.startswith("# TYPE ")}  # noqa: E731
        assert names(r.stdout) == names(text)
    tables = client.query_all("metrics")
    assert list(tables) == ["metrics"] and all(set(row) == {"text"} for row in tables["metrics"])
    # The same series either way. Their values are not compared: counters
    # move between the two queries (a heartbeat fell between them in a
    # CI run on a busy host).
    series = lambda rows: [  # noqa: E731
        ln if ln.startswith("#") else ln.rsplit(" ", 1)[0] for ln in "".join(r["text"] for r in rows).splitlines()
    ]
    assert series(client.query("metrics")) == series(tables["metrics"])
