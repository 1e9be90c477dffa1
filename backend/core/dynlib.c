/* Loading a library at run time into a table of entry points (see dynlib.h). */
#include "backend/core/dynlib.h"

#include "backend/core/errbuf.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The tables store dlsym's void * into function-pointer members (POSIX guarantees the sizes). */
_Static_assert(sizeof(int (*)(void)) == sizeof(void *), "function pointers fit void *");

/* The library under its soname, else the configured file, into *lib; *used: the name that
 * loaded. 0, or -ENOENT / -ELIBBAD with err set (dynlib_load's). */
static int dynlib_open(const struct dynlib *d, void **lib, const char **used, char *err,
                       size_t errlen) {
    const char *names[] = {d->soname, d->path};
    for (size_t i = 0; i < 2; i++) {
        if (!names[i] || (i > 0 && strcmp(names[i], d->soname) == 0))
            continue;
        if ((*lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) != NULL) {
            *used = names[i];
            return 0;
        }
    }
    /* a file that exists but does not load (another architecture, a broken copy) says why */
    if (d->path && strchr(d->path, '/') && access(d->path, F_OK) == 0) {
        const char *why = dlerror();
        size_t n = strlen(d->path);
        if (why && strncmp(why, d->path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
            why += n + 2; /* the loader's words start with the file's name */
        return errbuf_set(err, errlen, -ELIBBAD, "cannot load %s: %s (reinstall %s)", d->path,
                          why ? why : "?", d->package);
    }
    return errbuf_set(err, errlen, -ENOENT, "%s not found (install %s: %s)", d->soname, d->what,
                      d->package);
}

int dynlib_load(struct dynlib *d, char *err, size_t errlen) {
    int rc = 0;
    pthread_mutex_lock(&d->lock);
    if (!d->loaded) {
        const char *used = d->soname;
        void *lib = NULL;
        rc = dynlib_open(d, &lib, &used, err, errlen);
        for (size_t i = 0; lib && i < d->n_syms; i++) {
            void *p = dlsym(lib, d->syms[i].name);
            if (!p) {
                rc = errbuf_set(err, errlen, -ENOSYS, "%s lacks %s (%s too old?)", used,
                                d->syms[i].name, d->what);
                dlclose(lib);
                lib = NULL;
                break;
            }
            memcpy((char *)d->table + d->syms[i].off, &p, sizeof(p));
        }
        d->loaded = lib != NULL;
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}
