/* SPDX-License-Identifier: MIT */
/* Which provider an o2ib NI uses: the `provider` lnd tunable, else verbs where an RDMA device serves
 * the NI's address, else shm. The host probe (sysfs + getifaddrs) is split from the pure decisions. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "fabric.h"
#include "log.h"

ULNET_LOG_SUBSYS_DEFINE(FABRIC, "FABRIC")

const char *fab_provider_choose(const char *requested, bool rdma_dev_serves_addr, int *err)
{
	*err = 0;
	if (!requested)
		return rdma_dev_serves_addr ? "verbs" : "shm";
	if (!strcmp(requested, "shm") || !strcmp(requested, "verbs"))
		return requested;
	*err = -EINVAL;
	return NULL;
}

int fab_rdma_port_for_addr(const struct fab_rdma_scan *scan, struct in_addr addr)
{
	for (size_t i = 0; i < scan->nifs; i++) {
		if (scan->ifs[i].addr.s_addr != addr.s_addr)
			continue;
		for (size_t p = 0; p < scan->nports; p++)
			if (scan->ports[p].ifname[0] && !strcmp(scan->ports[p].ifname, scan->ifs[i].ifname))
				return (int)p;
	}
	return -1;
}

void fab_rdma_describe(const struct fab_rdma_scan *scan, char *buf, size_t len)
{
	size_t off = 0;

	snprintf(buf, len, "none");
	for (size_t p = 0; p < scan->nports && off < len; p++) {
		const struct fab_rdma_port *rp = &scan->ports[p];
		int n = snprintf(buf + off, len - off, "%s%s port %u (", p ? ", " : "", rp->dev, rp->port);
		size_t naddr = 0;

		if (n < 0 || (off += (size_t)n) >= len)
			break;
		if (!rp->ifname[0]) {
			n = snprintf(buf + off, len - off, "no netdev)");
			off += n > 0 ? (size_t)n : 0;
			continue;
		}
		n = snprintf(buf + off, len - off, "%s", rp->ifname);
		off += n > 0 ? (size_t)n : 0;
		for (size_t i = 0; i < scan->nifs && off < len; i++) {
			char a[INET_ADDRSTRLEN];

			if (strcmp(scan->ifs[i].ifname, rp->ifname))
				continue;
			inet_ntop(AF_INET, &scan->ifs[i].addr, a, sizeof(a));
			n = snprintf(buf + off, len - off, " %s", a);
			off += n > 0 ? (size_t)n : 0;
			naddr++;
		}
		if (off < len) {
			n = snprintf(buf + off, len - off, "%s)", naddr ? "" : ", no IPv4");
			off += n > 0 ? (size_t)n : 0;
		}
	}
}

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

void fab_rdma_scan(struct fab_rdma_scan *scan)
{
	struct ifaddrs *ifa, *i;
	struct dirent *dev, *port;
	char path[1024];
	DIR *d, *pd;

	memset(scan, 0, sizeof(*scan));
	/* every port lists the netdev its GIDs belong to: ports/N/gid_attrs/ndevs/0 */
	if ((d = opendir("/sys/class/infiniband"))) {
		while (scan->nports < FAB_SCAN_MAX && (dev = readdir(d))) {
			if (dev->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", dev->d_name);
			if (!(pd = opendir(path)))
				continue;
			while (scan->nports < FAB_SCAN_MAX && (port = readdir(pd))) {
				struct fab_rdma_port *rp = &scan->ports[scan->nports];

				if (port->d_name[0] == '.')
					continue;
				snprintf(rp->dev, sizeof(rp->dev), "%.*s", FAB_NAME_MAX - 1, dev->d_name);
				rp->port = (unsigned)strtoul(port->d_name, NULL, 10);
				snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%s/gid_attrs/ndevs/0",
					 dev->d_name, port->d_name);
				read_line(path, rp->ifname, sizeof(rp->ifname));
				scan->nports++;
			}
			closedir(pd);
		}
		closedir(d);
	}
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i && scan->nifs < FAB_SCAN_MAX; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		snprintf(scan->ifs[scan->nifs].ifname, FAB_NAME_MAX, "%.*s", FAB_NAME_MAX - 1, i->ifa_name);
		scan->ifs[scan->nifs++].addr = ((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
	}
	freeifaddrs(ifa);
}

bool fab_rdma_dev_serves(const struct sockaddr_in *addr)
{
	struct fab_rdma_scan scan;

	fab_rdma_scan(&scan);
	return fab_rdma_port_for_addr(&scan, addr->sin_addr) >= 0;
}

int fab_provider_select(const char *requested, const struct sockaddr_in *addr,
			const struct fab_provider_ops **out)
{
	char a[INET_ADDRSTRLEN] = "?";
	const char *name;
	int err;

	inet_ntop(AF_INET, &addr->sin_addr, a, sizeof(a));
	name = fab_provider_choose(requested, requested ? false : fab_rdma_dev_serves(addr), &err);
	if (!name) {
		ULNET_LOG(FABRIC, ERR, "o2ib %s: provider '%s' unknown (lnd tunable provider: shm or verbs)", a,
			  requested);
		return err;
	}
	if (!strcmp(name, "verbs")) {
#ifdef ULNET_HAVE_FABRIC_VERBS
		*out = &fab_verbs_ops;
		return 0;
#else
		ULNET_LOG(FABRIC, ERR, "o2ib %s: verbs provider not built (%s; see the meson summary); set lnd "
			  "tunable provider: shm", a,
			  requested ? "requested by lnd tunable provider" : "an RDMA device serves this address");
		return -EPROTONOSUPPORT;
#endif
	}
#ifdef ULNET_HAVE_FABRIC_SHM
	*out = &fab_shm_ops;
	return 0;
#else
	(void)out;
	ULNET_LOG(FABRIC, ERR, "o2ib %s: shm provider not built (-Dfabric_shm=disabled)", a);
	return -EPROTONOSUPPORT;
#endif
}
