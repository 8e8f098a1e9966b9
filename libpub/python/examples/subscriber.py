#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the messages of groups as they arrive through the local pubd.

    PUBD_SOCKET=/run/pubd/pubd.sock ./subscriber.py prices news [--count N] [--timeout S]

One line per message: group, source id (hex), sequence number, payload.
pubd restarts need nothing here: the client reconnects and resubscribes.
"""

import argparse
import sys

import pub


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("groups", nargs="+")
    ap.add_argument("--count", type=int, help="stop after this many messages")
    ap.add_argument("--timeout", type=float, help="stop after this many seconds without a message")
    ap.add_argument("--socket", help="pubd's socket (default: $PUBD_SOCKET, else /run/pubd/pubd.sock)")
    args = ap.parse_args()
    seen = 0
    try:
        with pub.Client(args.socket, client_name="example-subscriber") as c:
            for g in args.groups:
                c.subscribe(g)
            print("subscribed", flush=True)
            while args.count is None or seen < args.count:
                m = c.recv(timeout=args.timeout)
                if m is None:
                    break  # --timeout passed without a message
                text = m.data.decode("utf-8", "backslashreplace")
                print(f"{m.group} {m.source:016x} {m.seq} {text}", flush=True)
                seen += 1
    except KeyboardInterrupt:
        pass
    except pub.Error as e:
        print(f"subscriber: {e} [{e.name}]", file=sys.stderr)
        return 2 if isinstance(e, pub.Unreachable) else 1  # as pubctl: 2, pubd cannot be reached
    return 0


if __name__ == "__main__":
    sys.exit(main())
