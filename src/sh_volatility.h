/*
 * sh_volatility.h -- how likely each fingerprint bit is to differ in a
 * near-duplicate: p_j(u) = P(Y > |W_j(u)|) (PSM paper, section 5.1), read off
 * an empirical quantile table of Y.  `simhash calibrate` builds the table
 * from a corpus; a default measured on real pages is built in.  Because the
 * core library L2-normalises the weights, one table serves every corpus.
 */
#ifndef SH_VOLATILITY_H
#define SH_VOLATILITY_H

#include <stddef.h>
#include <stdint.h>

typedef struct sh_volatility_s sh_volatility_t;

/* The built-in table. */
const sh_volatility_t *sh_volatility_default(void);

/* p(|w|): probability that a bit with weight w flips in a near-duplicate. */
float sh_volatility_p(const sh_volatility_t *v, float w);

sh_volatility_t *sh_volatility_load(const char *path, char *err,
                                    size_t errlen);
int sh_volatility_save(const sh_volatility_t *v, const char *path,
                       char *err, size_t errlen);
void sh_volatility_free(sh_volatility_t *v);

#endif
