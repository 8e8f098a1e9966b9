#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Publish N messages to a group through the local pubd.

    PUBD_SOCKET=/run/pubd/pubd.sock ./publisher.py prices --count 10

The last message is published with sync=True, so pubd's verdict on all of
them (an ACL denial, an unknown group) is known before the script exits.
"""

import argparse
import sys

import pub


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("group")
    ap.add_argument("--count", type=int, default=10, help="messages to publish (default 10)")
    ap.add_argument("--socket", help="pubd's socket (default: $PUBD_SOCKET, else /run/pubd/pubd.sock)")
    args = ap.parse_args()
    try:
        with pub.Client(args.socket, client_name="example-publisher") as c:
            for i in range(args.count):
                c.publish(args.group, f"message {i}".encode(), sync=(i == args.count - 1))
    except pub.Error as e:
        print(f"publisher: {e} [{e.name}]", file=sys.stderr)
        return 2 if isinstance(e, pub.Unreachable) else 1  # as pubctl: 2, pubd cannot be reached
    print(f"published {args.count} messages to {args.group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
