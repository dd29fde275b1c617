/* cfi.c: a fast stack walker for x86-64, from the DWARF call frame information (.eh_frame)
 * that programs and libraries carry, with or without frame pointers.
 * libgcc's unwinder (unwind.c) runs each function's frame program again at every frame:
 * about 2,000 instructions a frame. Here the rule of a return address is worked out once and
 * cached: the caller's frame address (CFA) is rsp or rbp plus an offset; the return address
 * and rbp were saved at offsets from it. A cached frame costs a lookup and two loads.
 * A frame's module and frame table come from _dl_find_object (glibc 2.35): no lock, no
 * allocation. Not for a frame of this library, or of the module the walk found last.
 * Anything else gives up (-1) and the caller walks with libgcc: a signal frame, a CFA given by
 * an expression or by another register, a frame table in another layout, an address in no
 * module's table (code registered at run time).
 * Invariants: callers serialize calls (the cache has no lock: backtrace.c's gate); an entry
 * holds the frame table it was read from, so it never applies to another module loaded later
 * at the same address; a frame's CFA lies above the stack pointer, within MAX_FRAME bytes, or
 * the walk ends there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "platform.h"

#if defined(__x86_64__)

enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };
enum { K_EMPTY, K_STEP, K_LAST, K_GIVE_UP }; /* a cached rule's kind; K_LAST: RA undefined */
enum { H_SAME, H_OFFSET, H_UNDEF, H_OTHER }; /* how a register was saved */

#define SLOTS 4096u        /* cached rules, direct-mapped by return address */
#define MAX_FRAME (1u << 24)
#define STATES 8           /* DW_CFA_remember_state depth */

struct rule {
	uintptr_t pc;      /* the return address */
	const void *table; /* its module's .eh_frame_hdr */
	int32_t cfa_off;
	int16_t ra_off, rbp_off; /* from the CFA; rbp_off 0: rbp is the caller's too */
	uint8_t cfa_reg, kind;
};
static struct rule cache[SLOTS];

/* The frame state while a frame program runs: the CFA, and how rbp ([0]) and the return
 * address ([1]) were saved. */
struct cfs {
	int64_t cfa_off, off[2];
	uint8_t cfa_reg, how[2];
};

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t uleb(struct reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t sleb(struct reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (r->p < r->end && shift < 64) {
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	r->bad = true;
	return 0;
}

static uint64_t fixed(struct reader *r, unsigned n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		return 0;
	}
	uint64_t v = 0;
	memcpy(&v, r->p, n); /* (little-endian) */
	r->p += n;
	return v;
}

/* A pointer in DW_EH_PE encoding enc; base: the table's address for datarel. An indirect
 * pointer is returned as is (only the personality is one, and it is skipped). */
static uintptr_t encoded(struct reader *r, uint8_t enc, uintptr_t datarel)
{
	uintptr_t at = (uintptr_t)r->p, v;
	switch (enc & 0x0f) {
	case 0x00: v = fixed(r, 8); break;
	case 0x01: v = uleb(r); break;
	case 0x02: v = fixed(r, 2); break;
	case 0x03: v = fixed(r, 4); break;
	case 0x04: v = fixed(r, 8); break;
	case 0x09: v = (uintptr_t)sleb(r); break;
	case 0x0a: v = (uintptr_t)(int16_t)fixed(r, 2); break;
	case 0x0b: v = (uintptr_t)(int32_t)fixed(r, 4); break;
	case 0x0c: v = fixed(r, 8); break;
	default: r->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: return v;
	case 0x10: return v + at;
	case 0x30: return v + datarel;
	default: r->bad = true; return 0;
	}
}

/* A block (a DWARF expression) is skipped. */
static void skip_block(struct reader *r)
{
	uint64_t n = uleb(r);
	if (n > (uint64_t)(r->end - r->p))
		r->bad = true;
	else
		r->p += n;
}

/* A CFA register; 0xfe: one this walker does not follow (not rsp or rbp). */
static uint8_t cfa_reg(uint64_t reg)
{
	return reg == REG_RSP || reg == REG_RBP ? (uint8_t)reg : 0xfe;
}

static void set_how(struct cfs *s, uint64_t reg, uint8_t how, int64_t off)
{
	int i = reg == REG_RBP ? 0 : reg == REG_RA ? 1 : -1;
	if (i >= 0) {
		s->how[i] = how;
		s->off[i] = off;
	}
}

static void restore(struct cfs *s, const struct cfs *init, uint64_t reg)
{
	int i = reg == REG_RBP ? 0 : reg == REG_RA ? 1 : -1;
	if (i >= 0) {
		s->how[i] = init->how[i];
		s->off[i] = init->off[i];
	}
}

/* Runs a frame program from loc until the row past target; false: an operation it does not
 * know, or a malformed program. */
static bool run(struct reader *r, uintptr_t loc, uintptr_t target, uint64_t caf, int64_t daf,
		struct cfs *s, const struct cfs *init)
{
	struct cfs saved[STATES];
	unsigned depth = 0;
	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++;
		uint64_t reg, delta = 0;
		switch (op >> 6) {
		case 1: delta = op & 0x3f; goto advance;
		case 2: reg = op & 0x3f; set_how(s, reg, H_OFFSET, (int64_t)uleb(r) * daf); continue;
		case 3: restore(s, init, op & 0x3f); continue;
		}
		switch (op) {
		case 0x00: continue;
		case 0x02: delta = fixed(r, 1); goto advance;
		case 0x03: delta = fixed(r, 2); goto advance;
		case 0x04: delta = fixed(r, 4); goto advance;
		case 0x05: reg = uleb(r); set_how(s, reg, H_OFFSET, (int64_t)uleb(r) * daf); continue;
		case 0x06: restore(s, init, uleb(r)); continue;
		case 0x07: set_how(s, uleb(r), H_UNDEF, 0); continue;
		case 0x08: set_how(s, uleb(r), H_SAME, 0); continue;
		case 0x09: reg = uleb(r); uleb(r); set_how(s, reg, H_OTHER, 0); continue;
		case 0x0a:
			if (depth == STATES)
				return false;
			saved[depth++] = *s;
			continue;
		case 0x0b:
			if (!depth)
				return false;
			*s = saved[--depth];
			continue;
		case 0x0c: s->cfa_reg = cfa_reg(uleb(r)); s->cfa_off = (int64_t)uleb(r); continue;
		case 0x0d: s->cfa_reg = cfa_reg(uleb(r)); continue;
		case 0x0e: s->cfa_off = (int64_t)uleb(r); continue;
		case 0x0f: skip_block(r); s->cfa_reg = 0xff; break; /* an expression */
		case 0x10: reg = uleb(r); skip_block(r); set_how(s, reg, H_OTHER, 0); break;
		case 0x11: reg = uleb(r); set_how(s, reg, H_OFFSET, sleb(r) * daf); continue;
		case 0x12: s->cfa_reg = cfa_reg(uleb(r)); s->cfa_off = sleb(r) * daf; continue;
		case 0x13: s->cfa_off = sleb(r) * daf; continue;
		case 0x14: reg = uleb(r); uleb(r); set_how(s, reg, H_OTHER, 0); continue;
		case 0x15: reg = uleb(r); sleb(r); set_how(s, reg, H_OTHER, 0); continue;
		case 0x16: reg = uleb(r); skip_block(r); set_how(s, reg, H_OTHER, 0); break;
		case 0x2e: uleb(r); continue; /* DW_CFA_GNU_args_size */
		case 0x2f: reg = uleb(r); set_how(s, reg, H_OFFSET, -(int64_t)uleb(r) * daf); continue;
		default: return false;
		}
		continue;
advance:
		loc += delta * caf;
		if (loc > target)
			return true;
	}
	return !r->bad;
}

/* The rule of the frame whose code address is target (the return address less one), from
 * the module's .eh_frame_hdr. */
static __attribute__((noinline, cold)) uint8_t work_out(const uint8_t *hdr, uintptr_t target,
							struct rule *out)
{
	if (hdr[0] != 1 || hdr[3] != 0x3b) /* version 1, table of datarel sdata4 pairs */
		return K_GIVE_UP;
	struct reader r = {hdr + 4, hdr + 16, false};
	encoded(&r, hdr[1], (uintptr_t)hdr);
	uintptr_t count = encoded(&r, hdr[2], (uintptr_t)hdr);
	if (r.bad || !count)
		return K_GIVE_UP;
	const int32_t *t = (const int32_t *)(const void *)r.p;
	uintptr_t lo = 0, hi = count; /* the last entry whose start is <= target */
	while (hi - lo > 1) {
		uintptr_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)hdr + (intptr_t)t[2 * mid] <= target)
			lo = mid;
		else
			hi = mid;
	}
	if ((uintptr_t)hdr + (intptr_t)t[2 * lo] > target)
		return K_GIVE_UP; /* before the first function: libgcc's fallbacks decide */

	/* The FDE and its CIE. */
	const uint8_t *fde = hdr + t[2 * lo + 1];
	uint32_t flen, clen, cid;
	memcpy(&flen, fde, 4);
	if (flen == 0 || flen == 0xffffffffu)
		return K_GIVE_UP;
	memcpy(&cid, fde + 4, 4);
	const uint8_t *cie = fde + 4 - cid;
	memcpy(&clen, cie, 4);
	memcpy(&cid, cie + 4, 4);
	if (clen == 0 || clen == 0xffffffffu || cid != 0 || (cie[8] != 1 && cie[8] != 3))
		return K_GIVE_UP;
	struct reader c = {cie + 9, cie + 4 + clen, false};
	const char *aug = (const char *)c.p;
	size_t alen = strnlen(aug, (size_t)(c.end - c.p));
	c.p += alen + 1;
	uint64_t caf = uleb(&c);
	int64_t daf = sleb(&c);
	uint64_t ra = cie[8] == 1 ? fixed(&c, 1) : uleb(&c);
	uint8_t fenc = 0; /* absptr */
	bool z = aug[0] == 'z';
	if (z) {
		uint64_t n = uleb(&c);
		if (n > (uint64_t)(c.end - c.p))
			return K_GIVE_UP;
		const uint8_t *next = c.p + n;
		for (const char *a = aug + 1; *a && !c.bad; a++) {
			if (*a == 'R')
				fenc = (uint8_t)fixed(&c, 1);
			else if (*a == 'L')
				fixed(&c, 1);
			else if (*a == 'P')
				encoded(&c, (uint8_t)fixed(&c, 1), 0);
			else /* 'S' (a signal frame) and the rest */
				return K_GIVE_UP;
		}
		c.p = next;
	} else if (aug[0]) {
		return K_GIVE_UP;
	}
	if (c.bad || ra != REG_RA)
		return K_GIVE_UP;

	struct reader f = {fde + 8, fde + 4 + flen, false};
	uintptr_t start = encoded(&f, fenc, 0);
	uintptr_t range = encoded(&f, fenc & 0x0f, 0);
	if (z)
		skip_block(&f);
	if (f.bad)
		return K_GIVE_UP;
	if (target < start || target - start >= range)
		return K_GIVE_UP;

	struct cfs init = {.cfa_reg = 0xff}, s;
	if (!run(&c, 0, UINTPTR_MAX, caf, daf, &init, &init))
		return K_GIVE_UP;
	s = init;
	if (!run(&f, start, target, caf, daf, &s, &init))
		return K_GIVE_UP;

	if ((s.cfa_reg != REG_RSP && s.cfa_reg != REG_RBP) || s.cfa_off < 0 ||
	    s.cfa_off > INT32_MAX)
		return K_GIVE_UP;
	out->cfa_reg = s.cfa_reg;
	out->cfa_off = (int32_t)s.cfa_off;
	if (s.how[1] == H_UNDEF)
		return K_LAST;
	if (s.how[1] != H_OFFSET || s.how[0] == H_OTHER || s.off[1] < INT16_MIN ||
	    s.off[1] > INT16_MAX || s.off[0] < INT16_MIN || s.off[0] > INT16_MAX ||
	    (s.how[0] == H_OFFSET && s.off[0] == 0))
		return K_GIVE_UP;
	out->ra_off = (int16_t)s.off[1];
	out->rbp_off = s.how[0] == H_OFFSET ? (int16_t)s.off[0] : 0;
	return K_STEP;
}

/* A module's mapping and frame table. */
struct module {
	uintptr_t lo, hi;
	const void *table;
};
static struct module self; /* this library's: never unloaded (-z nodelete, or the program) */

/* The frame table of return address pc's module, or NULL. Without _dl_find_object when pc is
 * in this library or in last, the module of the walk's last lookup: a frame on the stack
 * keeps its module loaded, so last is still that module. */
static const void *table_for(uintptr_t pc, struct module *last)
{
	uintptr_t a = pc - 1;
	if (a - self.lo < self.hi - self.lo)
		return self.table;
	if (a - last->lo < last->hi - last->lo)
		return last->table;
	struct dl_find_object o;
	if (_dl_find_object((void *)a, &o) != 0 || !o.dlfo_eh_frame)
		return NULL;
	*last = (struct module){(uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end,
				o.dlfo_eh_frame};
	return o.dlfo_eh_frame;
}

/* The rule of return address pc, cached; NULL: give up. */
static const struct rule *rule_for(uintptr_t pc, struct module *last)
{
	const void *table = table_for(pc, last);
	if (!table)
		return NULL;
	struct rule *e = &cache[(pc * 0x9e3779b97f4a7c15ULL) >> 52];
	if (e->pc != pc || e->table != table || e->kind == K_EMPTY) {
		struct rule n = {.pc = pc, .table = table};
		n.kind = work_out(table, pc - 1, &n);
		*e = n;
	}
	return e->kind == K_GIVE_UP ? NULL : e;
}

__attribute__((noinline, no_sanitize_address)) int sm_cfi_backtrace(void **out, int max, int skip,
								    const void *from)
{
	if (!self.table) {
		struct dl_find_object o;
		if (_dl_find_object((void *)(uintptr_t)sm_cfi_backtrace, &o) != 0 ||
		    !o.dlfo_eh_frame)
			return -1;
		self = (struct module){(uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end,
				       o.dlfo_eh_frame};
	}
	/* This function has a frame pointer (__builtin_frame_address), and so has from's: the
	 * caller's state at the return is rsp = fp + 16, rbp = fp[0], pc = fp[1]. */
	const uintptr_t *fp = from ? from : __builtin_frame_address(0);
	uintptr_t rsp = (uintptr_t)(fp + 2), rbp = fp[0], pc = fp[1];
	struct module last = {0, 0, NULL};
	int n = 0;
	while (pc && n < max) {
		const struct rule *r = rule_for(pc, &last);
		if (!r)
			return -1;
		if (skip > 0)
			skip--;
		else
			out[n++] = (void *)pc;
		if (r->kind == K_LAST)
			break;
		uintptr_t cfa = (r->cfa_reg == REG_RSP ? rsp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
		if (cfa <= rsp || cfa - rsp > MAX_FRAME)
			break;
		pc = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->ra_off);
		if (r->rbp_off)
			rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
		rsp = cfa;
	}
	return n;
}

#else

int sm_cfi_backtrace(void **out, int max, int skip, const void *from)
{
	(void)out, (void)max, (void)skip, (void)from;
	return -1;
}

#endif
