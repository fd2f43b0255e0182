/* SPDX-License-Identifier: MIT */
/* Intrusive doubly linked list. */
#ifndef ULNET_LIST_H
#define ULNET_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct ulnet_list {
	struct ulnet_list *next, *prev;
};

#define ulnet_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void ulnet_list_init(struct ulnet_list *h) { h->next = h->prev = h; }
static inline bool ulnet_list_empty(const struct ulnet_list *h) { return h->next == h; }
static inline void ulnet_list__add(struct ulnet_list *n, struct ulnet_list *prev, struct ulnet_list *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}
static inline void ulnet_list_add_head(struct ulnet_list *n, struct ulnet_list *h) { ulnet_list__add(n, h, h->next); }
static inline void ulnet_list_add_tail(struct ulnet_list *n, struct ulnet_list *h) { ulnet_list__add(n, h->prev, h); }
static inline void ulnet_list_del(struct ulnet_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}
/* Move every entry of @from to the tail of @to; @from ends empty. */
static inline void ulnet_list_splice_tail_init(struct ulnet_list *from, struct ulnet_list *to)
{
	if (ulnet_list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	ulnet_list_init(from);
}
#define ulnet_list_first(h, type, member) ulnet_container_of((h)->next, type, member)
#define ulnet_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#endif
