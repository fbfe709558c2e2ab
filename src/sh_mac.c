/*
 * sh_mac.c -- HMAC-SHA256 through OpenSSL's EVP_MAC (sh_mac.h).
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "sh_mac.h"

int
sh_mac(unsigned char out[SH_MAC_FULL], const void *key, size_t keylen,
       const sh_mac_part_t *parts, size_t nparts)
{
    static EVP_MAC *hmac;       /* fetched once; a race leaks one */
    EVP_MAC_CTX    *ctx = NULL;
    OSSL_PARAM      params[2];
    size_t          i, len = 0;
    int             ok;

    if (hmac == NULL) {
        hmac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
    }
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 (char *) "SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();

    ok = hmac != NULL && (ctx = EVP_MAC_CTX_new(hmac)) != NULL
         && EVP_MAC_init(ctx, key, keylen, params) == 1;
    for (i = 0; ok && i < nparts; i++) {
        ok = EVP_MAC_update(ctx, parts[i].data, parts[i].len) == 1;
    }
    ok = ok && EVP_MAC_final(ctx, out, &len, SH_MAC_FULL) == 1
         && len == SH_MAC_FULL;
    EVP_MAC_CTX_free(ctx);
    if (!ok) {
        memset(out, 0, SH_MAC_FULL);
        return -1;
    }
    return 0;
}

int
sh_mac_derive(unsigned char *out, size_t len, const void *key, size_t keylen,
              const char *purpose)
{
    unsigned char full[SH_MAC_FULL];
    sh_mac_part_t part;

    part.data = purpose;
    part.len = strlen(purpose);
    if (len > sizeof(full) || sh_mac(full, key, keylen, &part, 1) != 0) {
        return -1;
    }
    memcpy(out, full, len);
    return 0;
}
