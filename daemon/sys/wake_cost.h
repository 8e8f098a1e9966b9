/* SPDX-License-Identifier: MIT */
/*
 * What a wakeup costs on this host, measured: a process asleep in read()
 * on a Unix SOCK_SEQPACKET socket, woken by a write from another, which is
 * what a client's doorbell or a datagram's arrival costs pubd when it
 * sleeps. It varies twentyfold between hardware and a VM under emulation,
 * and fabric.rx_linger_us auto is sized from it (core/linger.h).
 */
#ifndef PUBD_WAKE_COST_H
#define PUBD_WAKE_COST_H

#include <stdint.h>

/*
 * The median one-way time of a short ping-pong with a child process, in
 * nanoseconds; it takes some milliseconds at most, under emulation, and
 * well under one on hardware. 0 when it could not be measured (no fork,
 * no socket). The child is reaped before it returns.
 */
uint64_t pubd_wake_cost_ns(void);

#endif
