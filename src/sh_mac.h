/*
 * sh_mac.h -- HMAC-SHA256 over pieces of a message (OpenSSL's libcrypto).
 *
 * One place for the MAC the replication stream's entries carry
 * (sh_stream.h) and for the keys derived from the hash key
 * (sh_config_derive_key).  The HMAC implementation is fetched once per
 * process and kept, so that a MAC costs no lookup and no allocation that
 * outlives it.
 */
#ifndef SH_MAC_H
#define SH_MAC_H

#include <stddef.h>

#define SH_MAC_FULL     32          /* bytes of an HMAC-SHA256 */

typedef struct {
    const void *data;
    size_t      len;
} sh_mac_part_t;

/* HMAC-SHA256 under key of the parts, concatenated: 0, or -1 (out of
 * memory; out is then zeros, which no MAC equals by chance). */
int sh_mac(unsigned char out[SH_MAC_FULL], const void *key, size_t keylen,
           const sh_mac_part_t *parts, size_t nparts);

/*
 * A key of `len` bytes (at most SH_MAC_FULL) for `purpose`, derived one-way
 * from `key` (HMAC-SHA256(key, purpose)): a derived key reveals neither
 * the key nor another purpose's key.  0, or -1.
 */
int sh_mac_derive(unsigned char *out, size_t len, const void *key,
                  size_t keylen, const char *purpose);

#endif
