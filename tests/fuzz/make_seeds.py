#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpora of fuzz_wire and fuzz_reasm (small, deterministic).

    tests/fuzz/make_seeds.py [OUTDIR]   (default: corpus/ beside this script)

The header layout is the one daemon/wire.h documents; fuzz_reasm's input
format (two config bytes, then u8 clock advance + u16 length + datagram records)
is the one tests/fuzz/fuzz_reasm.c documents.
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


def heartbeat(grp, src, next_seq):
    return hdr(grp, src, next_seq, 0, 0, 0, 0, flags=HB)


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
        # Tight budget and inflight limits, streams forgotten (top bit).
        "pressure": records(0x88, [(0, a[0]), (0, b[0]), (0, c[0]), (0, frags(0, 1, 0, 100, 40)[1]),
                                   (0, a[1]), (250, b[1])]),
    }


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    for sub, seeds in (("wire", wire_seeds()), ("reasm", reasm_seeds())):
        d = os.path.join(top, sub)
        os.makedirs(d, exist_ok=True)
        for name, blob in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)


if __name__ == "__main__":
    main()
