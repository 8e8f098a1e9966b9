/* SPDX-License-Identifier: MIT */
/*
 * What RDMA devices this host has, for the error that says fabric.address
 * is on none of them: the device names under /sys/class/infiniband, each
 * with the network interface its first port carries (RoCE, iWARP) where
 * the kernel says. Read from sysfs, not from libibverbs: it is what an
 * operator looks at, and it answers where the rdma_cm device is missing.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "verbs_internal.h"

#define SYS_IB "/sys/class/infiniband"

/* The interface port 1 of dev carries ("" when none is said). */
static void port_netdev(const char *dev, char *out, size_t cap)
{
	char path[256];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), SYS_IB "/%s/ports/1/gid_attrs/ndevs/0", dev);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)cap, f))
		out[strcspn(out, "\n")] = 0;
	else
		out[0] = 0;
	fclose(f);
}

void verbs_devices_found(char *buf, size_t cap)
{
	size_t len = 0;
	struct dirent *e;
	DIR *dir;

	if (!cap)
		return;
	buf[0] = 0;
	dir = opendir(SYS_IB);
	if (!dir) {
		snprintf(buf, cap, "none (no " SYS_IB ")");
		return;
	}
	while ((e = readdir(dir))) {
		char nd[64];

		if (e->d_name[0] == '.')
			continue;
		port_netdev(e->d_name, nd, sizeof(nd));
		len += (size_t)snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, "%s%s%s%s%s",
					len ? ", " : "", e->d_name, nd[0] ? " (on " : "", nd, nd[0] ? ")" : "");
	}
	closedir(dir);
	if (!len)
		snprintf(buf, cap, "none (" SYS_IB " is empty)");
}
