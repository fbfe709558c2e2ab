
/*
 * A zone's own secret, when no simhash_seed is configured.
 *
 * The store finds keys by a keyed hash, and the DUST learner spreads hosts
 * over its slots by another: both keys are derived from simhash_seed.
 * Without one they were derived from an empty key, which anyone can do
 * offline: a client computed host slots and evicted a site's DUST entry
 * with 8 aimed requests (issue 31).  So a zone without simhash_seed gets a
 * random secret of its own for those two keys:
 *
 *   - with file=PATH, kept in PATH.secret beside the snapshot (64 hex
 *     digits, mode 0600), made at the first start: the snapshot's key
 *     hashes stay valid across restarts.  A secret file that others may
 *     read, that is not a regular file, or that is owned by another user
 *     than root or the master's (the workers' user could have chosen
 *     it), is refused: nginx -t says why and what to do;
 *   - without file=, drawn once per master process (it survives reloads;
 *     nothing outlives a restart anyway).
 *
 * The feature hash stays under simhash_seed alone, so that fingerprints
 * without a seed remain those of `simhash fingerprint`, comparable across
 * nodes and tools.  A replicated zone keeps the seed's keys: every node of
 * a tier must hash alike, and only a shared simhash_seed gives that (the
 * configuration warns when it is missing; entries under another seed are
 * refused and counted).
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/random.h>

#include "ngx_http_simhash.h"
#include "sh_mac.h"
#include "sh_store.h"


#define NGX_HTTP_SIMHASH_SECRET_LEN  32
#define NGX_HTTP_SIMHASH_SECRET_HEX  (2 * NGX_HTTP_SIMHASH_SECRET_LEN)


static ngx_int_t ngx_http_simhash_secret_run(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, u_char *out);
static ngx_int_t ngx_http_simhash_secret_random(u_char *out, size_t len);
static ngx_int_t ngx_http_simhash_secret_read(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, u_char *path, u_char *out);
static ngx_int_t ngx_http_simhash_secret_make(ngx_conf_t *cf,
    ngx_http_simhash_zone_t *zone, u_char *path, u_char *out);


/* the secret of zones without file=, drawn once per master process */
static u_char      ngx_http_simhash_run_secret[NGX_HTTP_SIMHASH_SECRET_LEN];
static ngx_uint_t  ngx_http_simhash_run_secret_set;


ngx_int_t
ngx_http_simhash_secret_local(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone)
{
    u_char  *path, secret[NGX_HTTP_SIMHASH_SECRET_LEN];

    if (zone->file.len == 0) {
        if (ngx_http_simhash_secret_run(cf, zone, secret) != NGX_OK) {
            return NGX_ERROR;
        }

    } else {
        path = ngx_pnalloc(cf->temp_pool, zone->file.len + sizeof(".secret"));
        if (path == NULL) {
            return NGX_ERROR;
        }

        ngx_sprintf(path, "%V.secret%Z", &zone->file);

        switch (ngx_http_simhash_secret_read(cf, zone, path, secret)) {

        case NGX_OK:
            break;

        case NGX_DECLINED:
            if (ngx_http_simhash_secret_make(cf, zone, path, secret)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            break;

        default:
            return NGX_ERROR;
        }
    }

    if (sh_mac_derive(zone->key_secret, sizeof(zone->key_secret), secret,
                      sizeof(secret), SH_STORE_KEY_PURPOSE)
        != 0
        || sh_mac_derive(zone->dust_secret, sizeof(zone->dust_secret),
                         secret, sizeof(secret), "dust")
           != 0
        || sh_mac_derive(zone->figures_secret, sizeof(zone->figures_secret),
                         secret, sizeof(secret),
                         NGX_HTTP_SIMHASH_FIGURES_PURPOSE)
           != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\": cannot derive its keys",
                      &zone->name);
        return NGX_ERROR;
    }

    ngx_explicit_memzero(secret, sizeof(secret));

    return NGX_OK;
}


/* this master process's secret: the same for every reload */

static ngx_int_t
ngx_http_simhash_secret_run(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    u_char *out)
{
    if (!ngx_http_simhash_run_secret_set) {
        if (ngx_http_simhash_secret_random(ngx_http_simhash_run_secret,
                                       sizeof(ngx_http_simhash_run_secret))
            != NGX_OK)
        {
            ngx_log_error(NGX_LOG_EMERG, cf->log, ngx_errno,
                          "simhash zone \"%V\": getrandom() failed",
                          &zone->name);
            return NGX_ERROR;
        }

        ngx_http_simhash_run_secret_set = 1;
    }

    ngx_memcpy(out, ngx_http_simhash_run_secret, NGX_HTTP_SIMHASH_SECRET_LEN);

    return NGX_OK;
}


static ngx_int_t
ngx_http_simhash_secret_random(u_char *out, size_t len)
{
    ssize_t  n;
    size_t   got;

    for (got = 0; got < len; got += n) {
        n = getrandom(out + got, len - got, 0);

        if (n < 0) {
            if (ngx_errno == NGX_EINTR) {
                n = 0;
                continue;
            }

            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * NGX_OK: the secret read from path; NGX_DECLINED: there is none yet;
 * NGX_ERROR: one that cannot be used, said at emerg.
 */

static ngx_int_t
ngx_http_simhash_secret_read(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    u_char *path, u_char *out)
{
    int        fd;
    u_char     hex[NGX_HTTP_SIMHASH_SECRET_HEX + 2];
    ssize_t    n;
    ngx_int_t  rc, v;
    ngx_uint_t i;
    struct stat  sb;

    fd = open((char *) path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
                             | O_NOCTTY);

    if (fd == -1) {
        if (ngx_errno == NGX_ENOENT) {
            return NGX_DECLINED;
        }

        ngx_log_error(NGX_LOG_EMERG, cf->log, ngx_errno,
                      "simhash zone \"%V\": cannot open its secret \"%s\"%s",
                      &zone->name, path,
                      ngx_errno == NGX_ELOOP ? " (a symbolic link)" : "");
        return NGX_ERROR;
    }

    rc = NGX_ERROR;

    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\": its secret \"%s\" is not a "
                      "regular file with one name", &zone->name, path);
        goto done;
    }

    if (sb.st_mode & 077) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\": its secret \"%s\" may be read "
                      "by others (mode %ui%ui%ui%ui): it is no secret; make "
                      "a new one (delete the file and the snapshot) or set "
                      "simhash_seed", &zone->name, path,
                      (ngx_uint_t) (sb.st_mode >> 9) & 7,
                      (ngx_uint_t) (sb.st_mode >> 6) & 7,
                      (ngx_uint_t) (sb.st_mode >> 3) & 7,
                      (ngx_uint_t) sb.st_mode & 7);
        goto done;
    }

    /*
     * Whoever owns the file may have chosen the secret, and a secret of a
     * client's choosing lets it aim keys and hosts at one slot again.
     * The master makes the file as itself; a file of another user (the
     * workers', who can write the snapshot's directory) is refused.
     */

    if (sb.st_uid != 0 && sb.st_uid != geteuid()) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "simhash zone \"%V\": its secret \"%s\" is owned by "
                      "uid %uL, neither root nor the user nginx starts as "
                      "(uid %uL): whoever owns it may have chosen it; if "
                      "you made it, give it to that user (chown), else "
                      "delete it and the snapshot for a new one, or set "
                      "simhash_seed", &zone->name, path,
                      (uint64_t) sb.st_uid, (uint64_t) geteuid());
        goto done;
    }

    n = read(fd, hex, sizeof(hex));

    if (n < NGX_HTTP_SIMHASH_SECRET_HEX
        || (n > NGX_HTTP_SIMHASH_SECRET_HEX
            && (n != NGX_HTTP_SIMHASH_SECRET_HEX + 1
                || hex[NGX_HTTP_SIMHASH_SECRET_HEX] != '\n')))
    {
        goto damaged;
    }

    for (i = 0; i < NGX_HTTP_SIMHASH_SECRET_LEN; i++) {
        v = ngx_hextoi(&hex[2 * i], 2);
        if (v == NGX_ERROR) {
            goto damaged;
        }

        out[i] = (u_char) v;
    }

    rc = NGX_OK;
    goto done;

damaged:

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "simhash zone \"%V\": its secret \"%s\" is damaged (not "
                  "%d hex digits): delete it and the snapshot, or set "
                  "simhash_seed", &zone->name, path,
                  NGX_HTTP_SIMHASH_SECRET_HEX);

done:

    ngx_explicit_memzero(hex, sizeof(hex));
    (void) close(fd);

    return rc;
}


/*
 * The first start: a new secret, written exclusively (a link planted there
 * is never written through).  When the directory cannot take it (missing,
 * not writable), this run's secret serves, and the log says what follows.
 */

static ngx_int_t
ngx_http_simhash_secret_make(ngx_conf_t *cf, ngx_http_simhash_zone_t *zone,
    u_char *path, u_char *out)
{
    int         fd;
    u_char      hex[NGX_HTTP_SIMHASH_SECRET_HEX + 1];
    ngx_err_t   err;

    if (ngx_http_simhash_secret_random(out, NGX_HTTP_SIMHASH_SECRET_LEN)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, ngx_errno,
                      "simhash zone \"%V\": getrandom() failed",
                      &zone->name);
        return NGX_ERROR;
    }

    fd = open((char *) path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                             | O_CLOEXEC, 0600);

    if (fd == -1) {
        ngx_log_error(NGX_LOG_WARN, cf->log, ngx_errno,
                      "simhash zone \"%V\" has no simhash_seed, and its "
                      "secret \"%s\" cannot be made: this run's own secret "
                      "keys it, so its snapshot will not load after a "
                      "restart", &zone->name, path);

        return ngx_http_simhash_secret_run(cf, zone, out);
    }

    ngx_hex_dump(hex, out, NGX_HTTP_SIMHASH_SECRET_LEN);
    hex[NGX_HTTP_SIMHASH_SECRET_HEX] = '\n';

    if (write(fd, hex, sizeof(hex)) != (ssize_t) sizeof(hex)
        || fsync(fd) != 0)
    {
        err = ngx_errno;
        (void) close(fd);
        (void) unlink((char *) path);
        ngx_explicit_memzero(hex, sizeof(hex));

        ngx_log_error(NGX_LOG_EMERG, cf->log, err,
                      "simhash zone \"%V\": cannot write its secret \"%s\"",
                      &zone->name, path);
        return NGX_ERROR;
    }

    ngx_explicit_memzero(hex, sizeof(hex));
    (void) close(fd);

    ngx_log_error(NGX_LOG_NOTICE, cf->log, 0,
                  "simhash zone \"%V\" has no simhash_seed: its key hashes "
                  "are keyed by a new random secret in \"%s\"; keep it "
                  "with the snapshot", &zone->name, path);

    return NGX_OK;
}
