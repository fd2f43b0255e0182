/* SPDX-License-Identifier: MIT */
/* Which provider an o2ib NI uses: the `provider` lnd tunable, else verbs where an RDMA device serves
 * the NI's address, else shm. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include "config.h"
#include "fabric.h"
#include "log.h"

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

/* The netdev that holds @addr, or false. */
static bool addr_ifname(const struct sockaddr_in *addr, char name[IF_NAMESIZE])
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr == addr->sin_addr.s_addr) {
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifa);
	return found;
}

bool fab_rdma_dev_serves(const struct sockaddr_in *addr)
{
	char ifname[IF_NAMESIZE], path[1024], nd[IF_NAMESIZE + 2];
	struct dirent *dev, *port;
	bool serves = false;
	DIR *d, *pd;

	if (!addr_ifname(addr, ifname) || !(d = opendir("/sys/class/infiniband")))
		return false;
	/* every port lists the netdevs its GIDs belong to: ports/N/gid_attrs/ndevs/0 */
	while (!serves && (dev = readdir(d))) {
		if (dev->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", dev->d_name);
		if (!(pd = opendir(path)))
			continue;
		while (!serves && (port = readdir(pd))) {
			FILE *f;

			if (port->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%s/gid_attrs/ndevs/0",
				 dev->d_name, port->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			if (fgets(nd, sizeof(nd), f)) {
				nd[strcspn(nd, "\n")] = 0;
				serves = !strcmp(nd, ifname);
			}
			fclose(f);
		}
		closedir(pd);
	}
	closedir(d);
	return serves;
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
		ULNET_LOG(FABRIC, ERR, "o2ib %s: verbs provider not built (%s); set lnd tunable provider: shm", a,
			  requested ? "requested by lnd tunable provider" : "an RDMA device serves this address");
		return -EPROTONOSUPPORT;
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
