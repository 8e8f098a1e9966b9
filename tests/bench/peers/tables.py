#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peer benchmarks' tables: one per measure, pubd's figure, each peer's,
and pubd's ratio to the best peer (pubd / best when higher is better, best /
pubd when lower is better: above 1 means pubd is ahead either way). Prints
the tables, and one JSON line per row to stdout and to OUT.

usage: tables.py RUNS.jsonl OUT.jsonl "pubd zmq-epgm ..."
"""
import json
import sys


def si(v):
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def size_name(b):
    return "1 MiB" if b >= 1 << 20 else "64 KiB" if b >= 65536 else "1 KiB" if b >= 1024 else "%d B" % b


def main():
    runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    # Cost per message delivered (to the slower subscriber), not published:
    # a transport that delivered nothing has no cost figure.
    for r in runs:
        if "cpu_s_per_M" in r:
            got = r["count"] * r.get("delivered_frac", 0)
            total = r["cpu_s_per_M"] * r["count"] / 1e6
            if got >= 1:
                r["cpu_s_per_M_delivered"] = total / got * 1e6
    out = open(sys.argv[2], "a")
    systems = sys.argv[3].split()

    def table(title, measure, keyf, casef, metrics, rows_sys):
        rs = [r for r in runs if r["measure"] == measure]
        if not rs:
            return
        keys = []
        for r in rs:
            if keyf(r) not in keys:
                keys.append(keyf(r))
        print()
        print(title)
        cols = ["case", "metric"] + rows_sys + ["best peer", "pubd/best", ""]
        lines = [cols]
        for k in keys:
            by = {r["system"]: r for r in rs if keyf(r) == k}
            for mname, mkey, higher, fmt, note in metrics:
                vals = {s: by[s][mkey] for s in rows_sys if s in by and mkey in by[s]}
                peers = {s: v for s, v in vals.items() if not s.startswith("pubd") and (higher or v)}
                row = {"bench": "peers", "measure": measure, "case": casef(k), "metric": mkey,
                       "better": "higher" if higher else "lower"}
                row.update(vals)
                best = None
                if peers and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in peers.values()):
                    best = (max if higher else min)(peers, key=peers.get)
                ratios = []
                for ps in [s for s in rows_sys if s.startswith("pubd") and s in vals]:
                    pv, bv = vals[ps], peers.get(best) if best else None
                    if isinstance(pv, bool) or bv is None or not pv or not bv:
                        continue
                    ratio = pv / bv if higher else bv / pv
                    row["ratio" if ps == "pubd" else "ratio_" + ps] = round(ratio, 3)
                    ratios.append("%s %.2f" % ("" if ps == "pubd" else ps.replace("pubd-", "") + ":", ratio))
                if best:
                    row["best_peer"] = best
                # The verdict is the best of pubd's ways (on the loss rows a
                # group with repair is the one that answers a reliable peer).
                verdict = ""
                best_pubd = [v for k2, v in row.items() if k2 == "ratio" or k2.startswith("ratio_")]
                if best_pubd:
                    verdict = "ahead" if max(best_pubd) >= 1 else "BEHIND"
                row["verdict"] = verdict
                cells = [casef(k), mname]
                for s in rows_sys:
                    v = vals.get(s)
                    c = "-" if v is None else fmt(v)
                    if note and s in by:
                        c += note(by[s])
                    cells.append(c)
                cells += [best or "-", " ".join(ratios) or "-", verdict]
                lines.append(cells)
                print(json.dumps(row), file=out)
        w = [max(len(l[i]) for l in lines) for i in range(len(cols))]
        for l in lines:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(l)))

    def flag(r):
        bad = []
        if r.get("delivered_frac", 1) < 1:
            bad.append("%.1f%%" % (100 * r["delivered_frac"]))
        if not r.get("in_order", True):
            bad.append("unordered")
        if r.get("wrong", 0):
            bad.append("%d wrong" % r["wrong"])
        return " (" + ", ".join(bad) + ")" if bad else ""

    tput_key = lambda r: (r["size"], r["subs"])
    tput_case = lambda k: "%s 1->%d" % (size_name(k[0]), k[1])
    table("throughput: delivered per subscriber (the slower one of two); (x%) = delivered fraction when < 100%",
          "tput", tput_key, tput_case,
          [("msgs/s", "msgs_per_s", True, si, flag), ("MB/s", "bytes_per_s", True, lambda v: "%.1f" % (v / 1e6), None),
           # A fast rate with messages lost is not ahead of a slower one that
           # loses none: the fraction is a row of its own.
           ("delivered", "delivered_frac", True, lambda v: "%.1f%%" % (100 * v), None)],
          systems)
    table("latency: 64 B ping-pong h1 <-> h2, one-way (round trip / 2), microseconds",
          "lat", lambda r: 64, lambda k: "64 B",
          [("p50 us", "p50_us", False, lambda v: "%.1f" % v, None),
           ("p99 us", "p99_us", False, lambda v: "%.1f" % v, None),
           ("client sleeps/rt", "client_sleeps_per_rt", False, lambda v: "%.2f" % v, None),
           ("daemon sleeps/rt", "daemon_sleeps_per_rt", False, lambda v: "%.2f" % v, None)], systems)
    loss_sys = ["pubd", "pubd-repair"] + systems[1:]
    table("loss: 1 KiB h1 -> h2, that share of every UDP datagram arriving at h2 dropped",
          "loss", lambda r: r["loss_pct"], lambda k: "%d%% loss" % k,
          [("delivered", "delivered_frac", True, lambda v: "%.2f%%" % (100 * v), None),
           ("in order", "in_order", True, lambda v: "yes" if v else "NO", None),
           ("msgs/s", "msgs_per_s", True, si, None)], loss_sys)
    table("cost: CPU seconds per million messages delivered (publisher + subscribers + daemons on the hosts used), "
          "peak RSS (MiB) of the largest client and of a daemon",
          "tput", tput_key, tput_case,
          [("cpu s/M", "cpu_s_per_M_delivered", False, lambda v: "%.1f" % v, None),
           ("client RSS", "rss_clients_max_kb", False, lambda v: "%.1f" % (v / 1024), None),
           ("daemon RSS", "rss_daemon_kb", False, lambda v: "%.1f" % (v / 1024) if v else "-", None)],
          systems)


main()
