/*
 * sh_stopwords.c -- stop-word sets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sh_fold.h"
#include "sh_stopwords.h"

struct sh_stopwords_s {
    uint64_t *slot;         /* 0 = empty; a word hashing to 0 is stored as 1 */
    size_t    mask;
    size_t    count;
};

/*
 * English function words: articles, pronouns, auxiliaries, prepositions,
 * conjunctions, and the fragments apostrophes leave ("don't" -> don, t).
 * Content words stay: "new", "page", "time" distinguish pages.
 */
static const char *const english[] = {
    "a", "about", "above", "after", "again", "against", "all", "am", "an",
    "and", "any", "are", "as", "at", "be", "because", "been", "before",
    "being", "below", "between", "both", "but", "by", "can", "could", "d",
    "did", "do", "does", "doing", "don", "down", "during", "each", "few",
    "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "herself", "him", "himself", "his", "how", "i", "if",
    "in", "into", "is", "it", "its", "itself", "just", "ll", "m", "me",
    "might", "more", "most", "must", "my", "myself", "no", "nor", "not",
    "now", "o", "of", "off", "on", "once", "only", "or", "other", "our",
    "ours", "ourselves", "out", "over", "own", "re", "s", "same", "shall",
    "she", "should", "so", "some", "such", "t", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these",
    "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "ve", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your",
    "yours", "yourself", "yourselves",
};

static sh_stopwords_t *
set_new(size_t expect)
{
    sh_stopwords_t *s = calloc(1, sizeof(*s));
    size_t          n = 16;

    if (s == NULL) {
        return NULL;
    }
    while (n < expect * 2) {
        n <<= 1;
    }
    s->slot = calloc(n, sizeof(uint64_t));
    if (s->slot == NULL) {
        free(s);
        return NULL;
    }
    s->mask = n - 1;
    return s;
}

static int
set_add(sh_stopwords_t **sp, const char *word, size_t len)
{
    sh_stopwords_t *s = *sp, *g;
    char            norm[SH_TOKEN_MAX + 4];
    uint64_t        h;
    size_t          i;

    len = sh_fold_word(word, len, norm);
    if (len == 0) {
        return 0;
    }
    h = XXH3_64bits(norm, len);
    h = h ? h : 1;

    if ((s->count + 1) * 2 > s->mask + 1) {
        g = set_new(s->count * 2 + 2);
        if (g == NULL) {
            return -1;
        }
        for (i = 0; i <= s->mask; i++) {
            if (s->slot[i] != 0) {
                size_t j = s->slot[i] & g->mask;
                while (g->slot[j] != 0) {
                    j = (j + 1) & g->mask;
                }
                g->slot[j] = s->slot[i];
                g->count++;
            }
        }
        sh_stopwords_free(s);
        *sp = s = g;
    }

    for (i = h & s->mask; s->slot[i] != 0; i = (i + 1) & s->mask) {
        if (s->slot[i] == h) {
            return 0;
        }
    }
    s->slot[i] = h;
    s->count++;
    return 0;
}

int
sh_stopwords_has(const sh_stopwords_t *s, uint64_t h)
{
    size_t i;

    h = h ? h : 1;      /* as stored */
    for (i = h & s->mask; s->slot[i] != 0; i = (i + 1) & s->mask) {
        if (s->slot[i] == h) {
            return 1;
        }
    }
    return 0;
}

sh_stopwords_t *
sh_stopwords_english(void)
{
    sh_stopwords_t *s;
    size_t          i, n = sizeof(english) / sizeof(english[0]);

    s = set_new(n);
    for (i = 0; s != NULL && i < n; i++) {
        if (set_add(&s, english[i], strlen(english[i])) != 0) {
            sh_stopwords_free(s);
            return NULL;
        }
    }
    return s;
}

sh_stopwords_t *
sh_stopwords_load(const char *path, char *err, size_t errlen)
{
    FILE           *f;
    char            line[1024];
    char           *p, *e;
    sh_stopwords_t *s;

    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open stop-word file \"%s\": %s", path,
                 strerror(errno));
        return NULL;
    }
    s = set_new(256);
    while (s != NULL && fgets(line, sizeof(line), f) != NULL) {
        if ((p = strchr(line, '#')) != NULL) {
            *p = '\0';
        }
        for (p = line; *p == ' ' || *p == '\t'; p++) { /* void */ }
        for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\r'
                    && *e != '\n'; e++) { /* void */ }
        if (e > p && set_add(&s, p, (size_t) (e - p)) != 0) {
            sh_stopwords_free(s);
            s = NULL;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read stop-word file \"%s\"", path);
        sh_stopwords_free(s);
        s = NULL;
    } else if (s == NULL) {
        snprintf(err, errlen, "out of memory reading \"%s\"", path);
    } else if (s->count == 0) {
        snprintf(err, errlen, "stop-word file \"%s\" has no words", path);
        sh_stopwords_free(s);
        s = NULL;
    }
    fclose(f);
    return s;
}

uint64_t
sh_stopwords_digest(const sh_stopwords_t *s)
{
    uint64_t d = s->count;
    size_t   i;

    /* a sum of mixed slot values: the same set gives the same digest
       whatever the order its words were added in */
    for (i = 0; i <= s->mask; i++) {
        if (s->slot[i] != 0) {
            d += XXH3_64bits(&s->slot[i], sizeof(s->slot[i]));
        }
    }
    return d;
}

void
sh_stopwords_free(sh_stopwords_t *s)
{
    if (s != NULL) {
        free(s->slot);
        free(s);
    }
}
