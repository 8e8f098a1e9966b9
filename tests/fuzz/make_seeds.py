#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpora of fuzz_wire, fuzz_reasm, fuzz_ipc, fuzz_rxpath,
fuzz_repair and fuzz_directlog (small, deterministic).

    tests/fuzz/make_seeds.py [OUTDIR]   (default: corpus/ beside this script)

The header layout is the one daemon/wire.h documents; fuzz_reasm's input
format (two config bytes, then u8 clock advance + u16 length + datagram records)
is the one tests/fuzz/fuzz_reasm.c documents; fuzz_ipc's (u8 op = action << 2 |
client, then the action's bytes), fuzz_rxpath's (u8 ctl, u16 length,
datagram) and fuzz_directlog's (8 config bytes, then u8 op records) are the
ones their sources document.
"""
import os
import struct
import sys

MAGIC = 0x50554244
HB = 0x01


def hdr(grp, src, seq, msg_len, idx, count, off, flags=0, version=1, hdr_len=48):
    return struct.pack(">IBBHQQQIIII", MAGIC, version, flags, hdr_len, grp, src, seq, msg_len, idx, count, off)


def frags(grp, src, seq, msg_len, unit):
    """The datagrams of one message cut the way frag.c cuts it."""
    body = bytes((seq * 31 + i) & 0xFF for i in range(msg_len))
    count = max(1, -(-msg_len // unit))
    out = []
    for i in range(count):
        off = i * unit
        chunk = body[off:off + unit]
        out.append(hdr(grp, src, seq, msg_len, i, count, off) + chunk)
    return out


BATCH = 0x08


def batch(grp, src, seq, lens):
    """A batch datagram (wire.h): whole messages seq, seq+1, ... of these lengths."""
    body = b"".join(struct.pack(">H", n) + bytes(((seq + k) * 31 + i) & 0xFF for i in range(n))
                    for k, n in enumerate(lens))
    return hdr(grp, src, seq, len(body), 0, len(lens), 0, flags=BATCH) + body


def heartbeat(grp, src, next_seq):
    return hdr(grp, src, next_seq, 0, 0, 0, 0, flags=HB)


def heartbeat_aged(grp, src, next_seq, age_us):
    """A heartbeat with the extension wire_ctl.h gives it: a token (0, none) and the stream's age."""
    return hdr(grp, src, next_seq, 0, 0, 0, 0, flags=HB, hdr_len=64) + struct.pack(">QQ", 0, age_us)


def records(conf, dgrams, max_msg=3):
    """fuzz_reasm input: config bytes, then (clock advance in us, datagram) pairs."""
    out = bytes([conf, max_msg])
    for adv, d in dgrams:
        out += bytes([adv]) + struct.pack(">H", len(d)) + d
    return out


def wire_seeds():
    three = frags(1, 2, 7, 100, 40)
    longer = bytearray(three[0])
    longer[6:8] = struct.pack(">H", 56)
    longer[48:48] = bytes(8)
    return {
        "data_first": three[0],
        "data_last": three[2],
        "single": frags(1, 2, 0, 30, 976)[0],
        "empty": frags(1, 2, 1, 0, 976)[0],
        "heartbeat": heartbeat(1, 2, 9),
        "hdr_len_56": bytes(longer),
        "bad_magic": b"XUBD" + three[0][4:],
        "short": three[0][:47],
        "batch": batch(1, 2, 7, [5, 0, 64, 1]),
        "batch_short_entry": batch(1, 2, 7, [5, 9])[:-1],
    }


def reasm_seeds():
    a = frags(0, 0, 0, 100, 40)
    b = frags(0, 0, 1, 100, 40)
    c = frags(1, 1, 0, 100, 40)
    return {
        # In order, one stream.
        "in_order": records(0x7F, [(1, d) for d in a + b]),
        # Reordered, one fragment twice, another stream interleaved.
        "reorder_dup": records(0x7F, [(1, a[2]), (1, c[1]), (1, a[0]), (1, a[0]), (2, c[0]), (1, a[1]), (1, c[2])]),
        # A lost message found by a heartbeat, then time passes.
        "tail_loss": records(0x7F, [(1, d) for d in a] + [(1, heartbeat(0, 0, 3)), (200, heartbeat(0, 0, 3))]),
        # A late message inside a missing range, and a far jump.
        "late_in_range": records(0x7F, [(1, frags(0, 0, 0, 5, 40)[0]), (1, frags(0, 0, 5, 5, 40)[0]),
                                         (1, frags(0, 0, 2, 5, 40)[0]),
                                         (1, frags(0, 0, (1 << 63) | (1 << 40), 5, 40)[0])]),
        # A message over max_message_size (256 B here), counted once.
        "too_large": records(0x7F, [(1, d) for d in frags(0, 0, 0, 600, 300)] + [(1, a[0])], max_msg=0),
        # A stream first heard at 1 (a fragment), rebased to 0 by a heartbeat
        # whose age picks BEGAN_SINCE (fuzz_reasm.c); then 0 arrives late.
        "rebase": records(0x7F, [(1, b[0]), (1, heartbeat_aged(0, 0, 2, 2)), (1, b[1]), (1, b[2])] +
                          [(1, d) for d in a] + [(200, heartbeat_aged(0, 0, 2, 3))]),
        # Delivered past the lost start already: the start is a gap at once.
        "rebase_delivered": records(0x7F, [(1, d) for d in b] + [(1, heartbeat_aged(0, 0, 2, 2)), (1, a[0])]),
        # Tight budget and inflight limits, streams forgotten (top bit).
        "pressure": records(0x88, [(0, a[0]), (0, b[0]), (0, c[0]), (0, frags(0, 1, 0, 100, 40)[1]),
                                   (0, a[1]), (250, b[1])]),
    }


# fuzz_ipc actions, in the order of enum action in fuzz_ipc.c.
(RAW, HELLO, SUB, UNSUB, PUBLISH, BIGHEAD, QUERY, READ, CLOSE, TURN, CREDITS, DOWN, UP, MTU, RELOAD, INJECT,
 SNDBUF) = range(17)
GA, GB, GC, GNONE = range(4)


def op(action, client, *args):
    return bytes([action << 2 | client]) + bytes(args)


def publish(client, group, length, req=0):
    """A PUBLISH of length bytes (below 32 KiB; from 16 KiB by the large-message path)."""
    assert length < 32768
    if length >= 16384:
        group |= 0x80
        length -= 16384
    return op(PUBLISH, client, group | (0x40 if req else 0), length & 0xFF, length >> 8)


def ipc_seeds():
    hello0, hello1 = op(HELLO, 0, 8), op(HELLO, 1, 3)
    raw_garbage = b"\x09\x00\x00\x00\x63\x00\x00\x00" + bytes(9)
    return {
        "pub_sub": hello0 + op(SUB, 0, GA) + hello1 + publish(1, GA, 100) + publish(1, GA, 5000, 1) +
        op(TURN, 0, 3) + op(READ, 0) + op(UNSUB, 0, GA) + op(READ, 0),
        "backpressure_close": hello1 + op(CREDITS, 0, 0) + b"".join(publish(1, GA, 200) for _ in range(300)) +
        op(CLOSE, 1) + op(CREDITS, 0, 255),
        "multicast_error": hello1 + op(DOWN, 0, GA) + b"".join(publish(1, GA, 1500) for _ in range(5)) +
        op(TURN, 0, 2) + op(UP, 0, GA),
        "mtu_change": hello1 + b"".join(publish(1, GA, 3000) for _ in range(3)) + op(CREDITS, 0, 0) +
        b"".join(publish(1, GA, 3000) for _ in range(3)) + op(MTU, 0, 0) + op(CREDITS, 0, 255),
        "acl_reload": hello0 + op(SUB, 0, GA) + op(RELOAD, 0, 1) + hello1 + publish(1, GA, 10) + op(TURN, 0, 2) +
        op(READ, 0),
        "unsub_mid_deliver": hello0 + op(SUB, 0, GA) + op(SNDBUF, 0) + hello1 + publish(1, GA, 30000) +
        op(TURN, 0, 2) + op(UNSUB, 0, GA) + op(TURN, 0, 2) + op(READ, 0) +
        b"".join(op(QUERY, 0, k) for k in (1, 2, 4)) + op(READ, 0),
        "publish_before_hello": op(BIGHEAD, 0, GA, 200) + op(BIGHEAD, 1, GB, 50) + op(TURN, 0, 4),
        "garbage": op(RAW, 2, len(raw_garbage), 0) + raw_garbage + op(READ, 2),
        "queries": hello0 + b"".join(op(QUERY, 0, k) for k in range(9)) + op(QUERY, 0, 0x83) + op(READ, 0),
        "slow_disconnect": op(RELOAD, 0, 2) + hello0 + op(SUB, 0, GA) + op(SUB, 0, GB) +
        b"".join(op(INJECT, 0, GA, s, 40) for s in range(20)) + op(TURN, 0, 5) + op(READ, 0),
        "acl_and_unknown": hello1 + publish(1, GB, 10, 1) + publish(1, GNONE, 10, 1) + publish(1, GC, 10) +
        op(SUB, 1, GC) + op(SUB, 1, GNONE) + op(UNSUB, 1, GB) + op(READ, 1),
    }


def rx_record(ctl, dgram):
    return bytes([ctl]) + struct.pack(">H", len(dgram)) + dgram


def fold(slot, group, turn=True, self_=False):
    """fuzz_rxpath ctl: arrive on slot (0-3 groups a b c r, 4: -1), header folded onto group."""
    return slot | (8 if self_ else 0) | 0x10 | group << 5 | (0x80 if turn else 0)


def rxpath_seeds():
    a0 = frags(0, 0, 0, 100, 40)
    a1 = frags(0, 0, 1, 100, 40)
    a2 = frags(0, 1, 2, 30, 40)
    return {
        "in_order": b"".join(rx_record(fold(0, 0), d) for d in a0 + a1),
        "loss_dup_reorder": b"".join(rx_record(fold(0, 0), d) for d in (a1[2], a0[0], a0[0], a1[0], a0[2],
                                                                      heartbeat(0, 0, 4))),
        "shared_address": rx_record(fold(0, 1), a0[0]) + rx_record(fold(0, 1), a0[1]) +
        rx_record(fold(0, 1), a0[2]) + rx_record(fold(0, 2), a2[0]),
        "unjoined": rx_record(fold(4, 0), a2[0]) + rx_record(fold(2, 0), a2[0]) + rx_record(0x07, a2[0]),
        "raw_and_self": rx_record(3 | 0x80, b"raw bytes, no header") + rx_record(fold(0, 0, self_=True), a2[0]) +
        rx_record(fold(0, 0), frags(0, 2, 0, 20, 40)[0]),
        "tail_loss": b"".join(rx_record(fold(2, 2), d) for d in frags(0, 1, 0, 50, 40)) +
        rx_record(fold(2, 2), heartbeat(0, 1, 9)),
        "unfolded": rx_record(0x00, a0[0]) + rx_record(0x01, b"short"),
        "batches": rx_record(fold(0, 0), batch(0, 0, 0, [3, 4, 5])) + rx_record(fold(0, 0), batch(0, 0, 5, [1, 2])) +
        rx_record(fold(0, 0), batch(0, 0, 3, [7, 8])) + rx_record(fold(0, 0), batch(0, 0, 3, [7, 8])) +
        rx_record(fold(0, 0), heartbeat(0, 0, 9)),
    }


CTL = 0x04


def ctl_body(typ, count, stream, first, frag_first=0, bitmap=b"", token=0):
    return struct.pack(">BBHIQQIHHQ", 2, typ, 40 + len(bitmap), count, stream, first, frag_first, len(bitmap),
                       0, token) + bitmap


def ctl_dgram(grp, src, body):
    return hdr(grp, src, 0, len(body), 0, 0, 0, flags=CTL) + body


def repair_seeds():
    """fuzz_repair input: op records (see tests/fuzz/fuzz_repair.c)."""
    def dg(d):
        return bytes([0]) + struct.pack(">H", len(d)) + d

    keep = b"".join(bytes([1, 0, n]) for n in (1, 16, 200, 3))
    nak = dg(ctl_dgram(2, 0xA, ctl_body(1, 2, 1, 1)))
    nak_b = dg(ctl_dgram(2, 0xB, ctl_body(1, 1, 1, 1, frag_first=0, bitmap=b"\x05")))
    gone = dg(ctl_dgram(2, 1, ctl_body(2, 5, 1, 10)))
    # flow control STATUS from two receivers, one with window 0, then time
    status = dg(ctl_dgram(2, 0xC, ctl_body(3, 64, 1, 3))) + dg(ctl_dgram(2, 0xD, ctl_body(3, 0, 1, 5)))
    gap = bytes([3, 0, 10, 8, 3])
    tick = bytes([2, 4])
    return {
        "keep_nak": keep + nak + tick + nak + nak_b,
        "gap_run_gone": gap + tick + tick + gone + tick * 4,
        "age_out": keep + bytes([2, 60]) + nak,
        "status": keep + status + bytes([2, 30]) + status,
    }


def directlog_seeds():
    """fuzz_directlog input: 8 config bytes, then op records (see tests/fuzz/fuzz_directlog.c)."""
    HONEST, MARKS, SMALL_RMAX, PLACED = 0x08, 0x10, 0x20, 0x40
    R1024 = 2 << 1  # max_record 1024

    def cfg(flags, glen=2, buf8=4, total64=0, start16=0, tail16=0):
        return bytes([flags, glen, buf8, total64]) + struct.pack("<HH", start16, tail16)

    def write(kind, length):
        return bytes([1, kind]) + struct.pack("<H", length)

    def read(n):
        return bytes([4, n])

    def burst(n):
        return bytes([5, n])

    def ctl(which, how, v):
        """which: 0 claim, 1 latest, 2 tail, 3 + 4 * slot a mark; how: 0 raw, 1 pos + v*16,
        2 pos + cap + v*16, 3 claim + v*16."""
        return bytes([3, which | how << 6]) + struct.pack("<q", v)

    def word(at8, v):
        return bytes([2]) + struct.pack("<HQ", at8, v)

    honest = cfg(HONEST | MARKS | R1024)
    hostile = cfg(MARKS | R1024, total64=40)
    return {
        "honest_in_order": honest + write(0, 100) + write(0, 0) + read(8) + write(1 + 4 * 7, 2000) +
        write(0, 50) + read(16),
        "honest_laps": honest + write(0, 10) + read(1) + burst(63) + read(31) + burst(63) + burst(63) + read(31),
        "honest_open": honest + write(0, 5) + read(1) + write(3, 300) + read(4) + write(0, 20) + read(8),
        "honest_pieces_lapped": honest + write(0, 5) + read(1) + write(1 + 4 * 31, 12000) + write(0, 7) +
        read(8) + bytes([8]),
        "unmarked_small_records": cfg(HONEST) + write(0, 3) + read(1) + burst(63) + burst(63) + read(31),
        "claim_past_a_lap": hostile + write(0, 100) + read(1) + write(0, 100) + ctl(0, 2, 1) + read(4),
        "latest_behind": hostile + write(0, 100) + read(1) + ctl(0, 2, 4) + ctl(1, 1, -2) + read(4),
        "mark_mid_record": hostile + write(0, 100) + read(1) + burst(40) + ctl(3 + 4 * 5, 1, 66) +
        ctl(0, 2, 8) + read(8),
        "garbage_word": hostile + write(0, 100) + read(1) + write(0, 100) + word(18, 7 << 32 | 64) + read(4),
        "raw_bytes": hostile + bytes([0, 0, 0, 32]) + bytes(range(1, 33)) + read(4),
        "other_group": hostile + write(2, 40) + read(2),
        "seq_gap_and_restart": hostile + write(0, 10) + read(1) + bytes([6, 200]) + write(0, 10) + read(2) +
        bytes([7, 0, 0]) + read(4),
        "placed_start": cfg(PLACED | SMALL_RMAX | R1024, start16=300, tail16=290) + write(0, 10) +
        burst(20) + read(8),
        # END (op 17: PEEK's byte with op / 9 odd): pubd ends the log where the writer is; the
        # writer writes on, in one record and in pieces; the reader must return none of it.
        "ended_then_written_on": honest + write(0, 40) + write(0, 40) + read(1) + bytes([17]) + burst(20) +
        write(1 + 4 * 3, 300) + read(31) + write(0, 40) + read(8),
        "ended_behind_the_reader": hostile + write(0, 40) + bytes([17]) + write(0, 40) + ctl(0, 2, 1) +
        read(8) + burst(30) + read(31),
    }


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    for sub, seeds in (("wire", wire_seeds()), ("reasm", reasm_seeds()), ("ipc", ipc_seeds()),
                      ("rxpath", rxpath_seeds()), ("repair", repair_seeds()),
                      ("directlog", directlog_seeds())):
        d = os.path.join(top, sub)
        os.makedirs(d, exist_ok=True)
        for name, blob in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)


if __name__ == "__main__":
    main()
