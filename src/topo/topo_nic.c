/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo_cpu.h"
#include "topo/topo_nic.h"

static const char *pci_kind(unsigned short class_id)
{
    switch (class_id) {
    case 0x0200: return "Ethernet";
    case 0x0207: return "InfiniBand";
    case 0x0280: return "Network";
    case 0x0c06: return "InfiniBand";
    }
    return (class_id >> 8) == 0x02 ? "Network" : "PCI";
}

static struct cvia_nic *nic_append(struct cvia_nic_list *l)
{
    struct cvia_nic *v = realloc(l->v, (size_t)(l->n + 1) * sizeof(*v)), *nic;

    if (!v)
        return NULL;
    l->v = v;
    nic = &v[l->n];
    memset(nic, 0, sizeof(*nic));
    nic->cpuset = hwloc_bitmap_alloc();
    nic->nodeset = hwloc_bitmap_alloc();
    if (!nic->cpuset || !nic->nodeset) {
        hwloc_bitmap_free(nic->cpuset);
        hwloc_bitmap_free(nic->nodeset);
        return NULL;
    }
    nic->package = nic->numa = -1;
    l->n++;
    return nic;
}

void cvia__nic_set_locality(hwloc_topology_t t, struct cvia_nic *nic,
                            hwloc_const_cpuset_t cpuset)
{
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
    hwloc_obj_t o;

    hwloc_bitmap_copy(nic->cpuset, cpuset && !hwloc_bitmap_iszero(cpuset) ? cpuset : all);
    hwloc_bitmap_and(nic->cpuset, nic->cpuset, all);
    if (hwloc_bitmap_iszero(nic->cpuset))
        hwloc_bitmap_copy(nic->cpuset, all);
    hwloc_cpuset_to_nodeset(t, nic->cpuset, nic->nodeset);
    nic->local_known = !hwloc_bitmap_isequal(nic->cpuset, all);
    nic->package = -1;
    o = NULL;
    while ((o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, o)))
        if (hwloc_bitmap_isincluded(nic->cpuset, o->cpuset)) {
            nic->package = (int)o->logical_index;
            break;
        }
    /* the device's own node as a core's (topo_cpu.h); else the first it
     * touches */
    nic->numa = -1;
    {
        hwloc_obj_t best = cvia__topo_node_of(t, nic->cpuset);
        o = NULL;
        while (!best && (o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, o)))
            if (hwloc_bitmap_isset(nic->nodeset, o->os_index) && cvia__topo_node_locality(o) &&
                hwloc_bitmap_intersects(cvia__topo_node_locality(o), nic->cpuset))
                best = o;
        if (best)
            nic->numa = (int)best->os_index;
    }
}

int cvia__nic_list(hwloc_topology_t t, struct cvia_nic_list *l)
{
    hwloc_obj_t os = NULL;

    memset(l, 0, sizeof(*l));
    while ((os = hwloc_get_next_osdev(t, os))) {
        struct cvia_nic *nic;
        hwloc_obj_t anc, pci = os->parent;

        if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !os->name)
            continue;
        if (!(nic = nic_append(l))) {
            cvia__nic_list_free(l);
            return -ENOMEM;
        }
        nic->from_topology = 1;
        snprintf(nic->name, sizeof(nic->name), "%s", os->name);
        if (pci && pci->type == HWLOC_OBJ_PCI_DEVICE) {
            const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
            snprintf(nic->pci, sizeof(nic->pci), "%04x:%02x:%02x.%01x", a->domain,
                     a->bus, a->dev, a->func);
            /* virtio (vendor 0x1af4): a paravirtual device, its interrupts
             * are the hypervisor's notifications */
            snprintf(nic->kind, sizeof(nic->kind), "%s%s", pci_kind(a->class_id),
                     a->vendor_id == 0x1af4 ? " (virtio)" : "");
            for (hwloc_obj_t s = pci->io_first_child; s; s = s->next_sibling) {
                size_t len = strlen(nic->siblings);
                if (s == os || s->type != HWLOC_OBJ_OS_DEVICE || !s->name)
                    continue;
                snprintf(nic->siblings + len, sizeof(nic->siblings) - len, "%s%s",
                         len ? " " : "", s->name);
            }
        } else {
            snprintf(nic->kind, sizeof(nic->kind), "virtual");
        }
        anc = hwloc_get_non_io_ancestor_obj(t, os);
        cvia__nic_set_locality(t, nic, anc ? anc->cpuset : NULL);
    }
    return 0;
}

void cvia__nic_list_free(struct cvia_nic_list *l)
{
    for (int i = 0; i < l->n; i++) {
        struct cvia_nic *nic = &l->v[i];
        for (int k = 0; k < nic->nirqs; k++) {
            hwloc_bitmap_free(nic->irqs[k].affinity);
            hwloc_bitmap_free(nic->irqs[k].effective);
        }
        free(nic->irqs);
        hwloc_bitmap_free(nic->cpuset);
        hwloc_bitmap_free(nic->nodeset);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

struct cvia_nic *cvia__nic_find(struct cvia_nic_list *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

struct cvia_nic *cvia__nic_add(hwloc_topology_t t, struct cvia_nic_list *l,
                               const char *name, hwloc_const_cpuset_t cpuset)
{
    struct cvia_nic *nic = nic_append(l);

    if (!nic)
        return NULL;
    snprintf(nic->name, sizeof(nic->name), "%s", name);
    snprintf(nic->kind, sizeof(nic->kind), "given");
    cvia__nic_set_locality(t, nic, cpuset);
    return nic;
}

int cvia__nic_add_irq(struct cvia_nic *nic, unsigned irq, const char *action,
                      hwloc_const_cpuset_t affinity)
{
    struct cvia_nic_irq *v, *q;

    for (int k = 0; k < nic->nirqs; k++)
        if (nic->irqs[k].irq == irq)
            return 0;
    if (!(v = realloc(nic->irqs, (size_t)(nic->nirqs + 1) * sizeof(*v))))
        return -ENOMEM;
    nic->irqs = v;
    q = &v[nic->nirqs];
    memset(q, 0, sizeof(*q));
    if (!(q->affinity = hwloc_bitmap_alloc()))
        return -ENOMEM;
    if (!(q->effective = hwloc_bitmap_alloc())) {
        hwloc_bitmap_free(q->affinity);
        return -ENOMEM;
    }
    q->irq = irq;
    snprintf(q->action, sizeof(q->action), "%s", action ? action : "");
    if (affinity)
        hwloc_bitmap_copy(q->affinity, affinity);
    nic->nirqs++;
    return 0;
}

static void root_path(char *buf, size_t cap, const char *root, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void root_path(char *buf, size_t cap, const char *root, const char *fmt, ...)
{
    va_list ap;
    size_t len;

    snprintf(buf, cap, "%s", root && *root ? root : "/");
    len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    if (len == 1 && buf[0] == '/')
        buf[--len] = '\0';
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

int cvia__irq_action(const char *root, unsigned irq, char *buf, size_t cap)
{
    char path[4096], line[4096];
    FILE *f;
    int rc = 0;

    buf[0] = '\0';
    root_path(path, sizeof(path), root, "/proc/interrupts");
    if (!(f = fopen(path, "r")))
        return -errno;
    while (fgets(line, sizeof(line), f)) {
        char *p = line, *end, *last;
        unsigned long n;
        while (*p == ' ')
            p++;
        n = strtoul(p, &end, 10);
        if (end == p || *end != ':' || n != irq)
            continue;
        /* the action list is the last whitespace-separated field */
        line[strcspn(line, "\n")] = '\0';
        end = line + strlen(line);
        while (end > line && isspace((unsigned char)end[-1]))
            *--end = '\0';
        last = strrchr(line, ' ');
        snprintf(buf, cap, "%s", last ? last + 1 : "");
        break;
    }
    fclose(f);
    return rc;
}

static int irq_list_read(const char *root, unsigned irq, const char *file, hwloc_bitmap_t set)
{
    char path[4096], text[4096];
    ssize_t n;
    int fd, rc = 0;

    root_path(path, sizeof(path), root, "/proc/irq/%u/%s", irq, file);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    n = read(fd, text, sizeof(text) - 1);
    if (n < 0)
        rc = -errno;
    close(fd);
    if (rc)
        return rc;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    if (hwloc_bitmap_list_sscanf(set, text) < 0)
        return -EINVAL;
    return 0;
}

int cvia__irq_affinity_read(const char *root, unsigned irq, hwloc_bitmap_t set)
{
    return irq_list_read(root, irq, "smp_affinity_list", set);
}

int cvia__irq_effective_read(const char *root, unsigned irq, hwloc_bitmap_t set)
{
    return irq_list_read(root, irq, "effective_affinity_list", set);
}

int cvia__irq_affinity_write(const char *root, unsigned irq, hwloc_const_bitmap_t set)
{
    char path[4096], text[4096];
    ssize_t n;
    size_t len;
    int fd, rc = 0;

    if (hwloc_bitmap_iszero(set) || hwloc_bitmap_weight(set) < 0)
        return -EINVAL;
    root_path(path, sizeof(path), root, "/proc/irq/%u/smp_affinity_list", irq);
    hwloc_bitmap_list_snprintf(text, sizeof(text), set);
    len = strlen(text);
    text[len++] = '\n';
    /* O_TRUNC so that a plain file in a test tree ends up holding just this */
    if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
        return -errno;
    n = write(fd, text, len);
    if (n < 0)
        rc = -errno;
    else if ((size_t)n != len)
        rc = -EIO;
    if (close(fd) < 0 && !rc)
        rc = -errno;
    return rc;
}

static int irqs_from_dir(const char *dir, struct cvia_nic *nic, const char *root)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned vals[1024];
    int n = 0, rc = 0;

    if (!d)
        return -errno;
    while ((e = readdir(d)) && n < (int)(sizeof(vals) / sizeof(vals[0]))) {
        char *end;
        unsigned long v = strtoul(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end)
            continue;
        vals[n++] = (unsigned)v;
    }
    closedir(d);
    /* numeric order, not directory order */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && vals[j - 1] > vals[j]; j--) {
            unsigned x = vals[j];
            vals[j] = vals[j - 1];
            vals[j - 1] = x;
        }
    for (int i = 0; i < n && !rc; i++) {
        char action[64];
        hwloc_bitmap_t aff = hwloc_bitmap_alloc();
        if (!aff)
            return -ENOMEM;
        cvia__irq_action(root, vals[i], action, sizeof(action));
        if (cvia__irq_affinity_read(root, vals[i], aff) < 0)
            hwloc_bitmap_zero(aff);
        rc = cvia__nic_add_irq(nic, vals[i], action, aff);
        if (!rc && cvia__irq_effective_read(root, vals[i], aff) == 0)
            hwloc_bitmap_copy(nic->irqs[nic->nirqs - 1].effective, aff);
        hwloc_bitmap_free(aff);
    }
    return rc ? rc : n;
}

int cvia__nic_read_irqs(const char *root, struct cvia_nic *nic)
{
    char path[4096];
    int n;
    FILE *f;

    root_path(path, sizeof(path), root, "/sys/class/net/%s", nic->name);
    if (access(path, F_OK) < 0)
        return -ENODEV;
    root_path(path, sizeof(path), root, "/sys/class/net/%s/device/msi_irqs", nic->name);
    if ((n = irqs_from_dir(path, nic, root)) > 0)
        return n;
    /* virtio: the net device hangs below virtioN, the PCI function above */
    root_path(path, sizeof(path), root, "/sys/class/net/%s/device/../msi_irqs", nic->name);
    if ((n = irqs_from_dir(path, nic, root)) > 0)
        return n;
    root_path(path, sizeof(path), root, "/sys/class/net/%s/device/irq", nic->name);
    if ((f = fopen(path, "r"))) {
        unsigned irq = 0;
        int ok = fscanf(f, "%u", &irq) == 1;
        fclose(f);
        if (ok && irq > 0) {
            char action[64];
            hwloc_bitmap_t aff = hwloc_bitmap_alloc();
            if (!aff)
                return -ENOMEM;
            cvia__irq_action(root, irq, action, sizeof(action));
            if (cvia__irq_affinity_read(root, irq, aff) < 0)
                hwloc_bitmap_zero(aff);
            n = cvia__nic_add_irq(nic, irq, action, aff);
            if (!n && cvia__irq_effective_read(root, irq, aff) == 0)
                hwloc_bitmap_copy(nic->irqs[nic->nirqs - 1].effective, aff);
            hwloc_bitmap_free(aff);
            return n < 0 ? n : 1;
        }
    }
    return 0;
}
