/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* cvia_var_info, cvia_provider_info, cvia_provider_cleanup: what cvia-info
 * shows, through the public ABI, so that it describes the library that
 * programs load (and the layers they load with it), not a copy of its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corevia/corevia.h>
#include "prov/prov.h"
#include "util/param.h"

/* The table and entry of the @index-th variable, or -ENOENT. */
static int var_at(int index, const struct cvia_param_table **tp, const struct cvia_param **pp)
{
    const struct cvia_param_table *t;

    for (int ti = 0; (t = cvia__param_table(ti)); ti++) {
        for (const struct cvia_param *p = t->params; p->name; p++) {
            if (index-- == 0) {
                *tp = t;
                *pp = p;
                return 0;
            }
        }
    }
    return -ENOENT;
}

int cvia_var_info(int index, cvia_var_info_t *info, size_t size)
{
    const struct cvia_param_table *t;
    const struct cvia_param *p;
    cvia_var_info_t v;
    /* the widest field a table holds: a string of CVIA_PARAM_STRLEN */
    _Alignas(16) unsigned char scratch[CVIA_PARAM_STRLEN + 16];
    const char *env;
    int rc;

    if (index < 0 || !info || !size)
        return -EINVAL;
    if ((rc = var_at(index, &t, &p)))
        return rc;
    memset(&v, 0, sizeof(v));
    cvia__param_varname(t, p, v.name, sizeof(v.name));
    v.component = t->component;
    v.syntax = cvia__param_syntax(p);
    v.desc = p->desc;
    v.dflt_text = p->dflt;
    env = getenv(v.name);
    v.set = env != NULL;
    v.valid = 1;
    if (!strcmp(t->component, "boot")) {
        /* set by the launcher and read as text: no struct behind them */
        snprintf(v.dflt, sizeof(v.dflt), "%s", p->dflt);
        snprintf(v.value, sizeof(v.value), "%s", env ? env : p->dflt);
    } else {
        if (cvia__param_parse(p, p->dflt, scratch) == 0)
            cvia__param_format(p, scratch, v.dflt, sizeof(v.dflt));
        else
            snprintf(v.dflt, sizeof(v.dflt), "%s", p->dflt);
        if (env && cvia__param_parse(p, env, scratch) == 0)
            cvia__param_format(p, scratch, v.value, sizeof(v.value));
        else {
            v.valid = !env;
            snprintf(v.value, sizeof(v.value), "%s", v.dflt);
        }
    }
    memcpy(info, &v, size < sizeof(v) ? size : sizeof(v));
    return 0;
}

int cvia_var_check(void)
{
    return cvia__param_check_unknown(NULL);
}

/* The @index-th provider built in (index >= 0), or NULL past the last. */
static const struct cvia_prov_desc *prov_at(int index)
{
    for (int i = 0; i < index; i++)
        if (!cvia__prov_list[i])
            return NULL;
    return cvia__prov_list[index];
}

int cvia_provider_info(int index, cvia_provider_info_t *info, size_t size)
{
    const struct cvia_prov_desc *d;
    cvia_provider_info_t v;

    if (index < 0 || !info || !size)
        return -EINVAL;
    if (!(d = prov_at(index)))
        return -ENOENT;
    memset(&v, 0, sizeof(v));
    v.name = d->name;
    v.desc = d->desc;
    d->ops->describe(v.state, sizeof(v.state));
    memcpy(info, &v, size < sizeof(v) ? size : sizeof(v));
    return 0;
}

int cvia_provider_cleanup(int index)
{
    const struct cvia_prov_desc *d;

    if (index < 0)
        return -EINVAL;
    if (!(d = prov_at(index)))
        return -ENOENT;
    return d->ops->cleanup();
}
