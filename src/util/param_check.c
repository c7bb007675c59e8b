/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 corevia developers */
/* The unknown-name check: every CVIA_* variable in the environment against
 * every table this process knows (cvia__param_table, src/core/param_list.c).
 * Apart from param.c because it needs that list: the DSM library and the
 * libfabric provider link a private copy of the parsers and the loader
 * (param.c, log.c) to read their own tables, and must not pull in the
 * core's list of tables with them. */
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "util/param.h"

extern char **environ;

int cvia__param_check_unknown(const char *const *extra)
{
    char var[128], best[128];
    int unknown = 0;

    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        char name[128];
        size_t best_d = (size_t)-1;
        int known = 0;

        if (strncmp(*e, "CVIA_", 5) || len >= sizeof(name))
            continue;
        memcpy(name, *e, len);
        name[len] = '\0';
        best[0] = '\0';
        const struct cvia_param_table *t;
        for (int ti = 0; (t = cvia__param_table(ti)) && !known; ti++) {
            for (const struct cvia_param *p = t->params; p->name; p++) {
                size_t d;
                cvia__param_varname(t, p, var, sizeof(var));
                if (!strcmp(var, name)) {
                    known = 1;
                    break;
                }
                d = cvia__edit_distance(name, var);
                if (d < best_d) {
                    best_d = d;
                    strcpy(best, var);
                }
            }
        }
        for (int i = 0; extra && extra[i] && !known; i++) {
            size_t d;
            if (!strcmp(extra[i], name)) {
                known = 1;
                break;
            }
            d = cvia__edit_distance(name, extra[i]);
            if (d < best_d) {
                best_d = d;
                snprintf(best, sizeof(best), "%s", extra[i]);
            }
        }
        if (!known) {
            /* a layer's name space, and that layer is not loaded here */
            for (int i = 0; cvia__param_layer_prefixes[i] && !known; i++) {
                const char *lp = cvia__param_layer_prefixes[i];
                int loaded = 0;
                if (strncmp(name + 5, lp, strlen(lp)))
                    continue;
                for (int ti = 0; (t = cvia__param_table(ti)); ti++)
                    loaded |= !strcmp(t->prefix, lp);
                known = !loaded;
            }
        }
        if (known)
            continue;
        unknown++;
        if (best[0] && best_d <= 4)
            cvia_warn(CONF, "unknown variable %s (did you mean %s?)", name, best);
        else
            cvia_warn(CONF, "unknown variable %s (cvia-info -c lists them all)", name);
    }
    return unknown;
}
