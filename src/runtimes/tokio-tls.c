// SPDX-License-Identifier: MIT
// Thread pointers from glibc's thread lists (tokio-tls.h): the loader's
// _rtld_global from its dynamic symbols, the list heads and struct
// pthread's members from its debug file's DWARF; each descriptor checked
// (its header's self pointer is its own address) before it is believed.
#include "tokio-tls.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debugfind.h"
#include "dwtype.h"
#include "space.h"

struct tktls {
	struct dwt *d;
	uint64_t rtld; /* _rtld_global's address in the target */
	uint64_t used_off, user_off; /* the list heads in it */
	uint64_t list_off, tid_off, self_off; /* in struct pthread */
};

void tktls_free(struct tktls *t)
{
	if (!t)
		return;
	dwt_free(t->d);
	free(t);
}

/* The build-id note and the dynamic symbol NAME of the ELF file open as FD. */
static int elf_facts(int fd, unsigned char *id, int *idlen, const char *name, uint64_t *value)
{
	int own = dup(fd);
	if (own < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(own, ELF_C_READ_MMAP, NULL);
	*idlen = 0;
	*value = 0;
	for (Elf_Scn *scn = e ? elf_nextscn(e, NULL) : NULL; scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		if (sh.sh_type == SHT_NOTE && !*idlen) {
			GElf_Nhdr nh;
			size_t off = 0, noff, doff;
			while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    !memcmp((char *)data->d_buf + noff, "GNU", 4) && nh.n_descsz <= 64) {
					memcpy(id, (char *)data->d_buf + doff, nh.n_descsz);
					*idlen = (int)nh.n_descsz;
					break;
				}
			}
		}
		if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize) {
			size_t n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 0; i < n && !*value; i++) {
				GElf_Sym sym;
				const char *nm;
				if (gelf_getsym(data, (int)i, &sym) &&
				    (nm = elf_strptr(e, sh.sh_link, sym.st_name)) && !strcmp(nm, name))
					*value = sym.st_value;
			}
		}
	}
	if (e)
		elf_end(e);
	close(own);
	return 0;
}

struct tktls *tktls_new(struct sd_space *sp, const char **why)
{
	struct sd_tmod *ld = NULL;
	for (size_t i = 0; i < sp->nmods; i++)
		if (sp->mods[i].name && !strncmp(sp->mods[i].name, "ld-linux", 8) && sp->mods[i].elf)
			ld = &sp->mods[i];
	if (!ld || ld->elf->fd < 0) {
		*why = "no dynamic loader";
		return NULL;
	}
	unsigned char id[64];
	int idlen;
	uint64_t rtld;
	if (elf_facts(ld->elf->fd, id, &idlen, "_rtld_global", &rtld) < 0 || !rtld) {
		*why = "no _rtld_global in the dynamic loader";
		return NULL;
	}
	char *path = NULL;
	int fd = debugfind_search(ld->elf->path, NULL, 0, id, idlen, &path);
	free(path);
	if (fd < 0) {
		*why = "no debug file for the dynamic loader (libc6-dbg)";
		return NULL;
	}
	struct sd_error err = {0};
	struct dwt *d = dwt_open_fd(fd, ld->name, &err);
	close(fd);
	struct dwt_type rg, pt;
	struct tktls *t = sd_xcalloc(1, sizeof(*t));
	t->d = d;
	t->rtld = rtld + ld->bias;
	if (!d || dwt_type(d, "struct rtld_global", &rg, NULL) < 0 ||
	    dwt_type(d, "struct pthread", &pt, NULL) < 0 ||
	    dwt_member(d, &rg, "_dl_stack_used", &t->used_off, NULL, NULL) < 0 ||
	    dwt_member(d, &rg, "_dl_stack_user", &t->user_off, NULL, NULL) < 0 ||
	    dwt_member(d, &pt, "list", &t->list_off, NULL, NULL) < 0 ||
	    dwt_member(d, &pt, "tid", &t->tid_off, NULL, NULL) < 0 ||
	    dwt_member(d, &pt, "header.self", &t->self_off, NULL, NULL) < 0) {
		*why = "the dynamic loader's debug file lacks struct pthread or rtld_global";
		tktls_free(t);
		return NULL;
	}
	return t;
}

size_t tktls_threads(struct tktls *t, struct rtmem *mem, size_t max, struct tktls_thread **out)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	uint64_t heads[2] = {t->rtld + t->used_off, t->rtld + t->user_off};
	for (int h = 0; h < 2; h++) {
		uint64_t node = 0;
		if (rtmem_uint(mem, heads[h], 8, &node, "glibc's thread list", NULL) < 0)
			continue;
		/* A circular list through its head; bounded against a corrupt one. */
		for (size_t steps = 0; node && node != heads[h] && steps < max; steps++) {
			uint64_t p = node - t->list_off, self = 0, tid = 0, next = 0;
			if (rtmem_uint(mem, p + t->self_off, 8, &self, "a thread descriptor", NULL) < 0 ||
			    self != p ||
			    rtmem_uint(mem, p + t->tid_off, 4, &tid, "a thread's tid", NULL) < 0 ||
			    rtmem_uint(mem, node, 8, &next, "glibc's thread list", NULL) < 0)
				break;
			if (tid && n < max) {
				sd_grow(out, &cap, n + 1, sizeof(**out));
				(*out)[n].tid = (pid_t)tid;
				(*out)[n].tp = p;
				n++;
			}
			node = next;
		}
	}
	return n;
}
