/*
 * sh_budget.c -- the account of what a page may cost the parser
 * (sh_budget.h): the parser's own charges, and the verdict.
 */
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sh_budget.h"

/*
 * Per error, and per element of a stack walk, charged from the parser's
 * reports.  A walk looking for a name compares it with each element's; a
 * walk that may close elements also looks each one up in a list of eleven
 * priorities (htmlGetEndPriority), twelve comparisons an element.
 */
#define COST_ERROR      300
#define COST_STEP       3
#define COST_STEP_PRIO  26

/*
 * Characters in p[0..n): bytes that do not continue a UTF-8 sequence.
 * Sixteen at a time, in byte counters summed every 255 rounds.
 */
size_t
sh_budget_count_chars(const unsigned char *p, size_t n)
{
    size_t i = 0, count = 0;
#ifdef __SSE2__
    const __m128i cont = _mm_set1_epi8((char) 0xBF);
    __m128i       acc;
    unsigned      k;

    while (i + 16 <= n) {
        acc = _mm_setzero_si128();
        for (k = 0; k < 255 && i + 16 <= n; k++, i += 16) {
            /* signed: 0x80..0xBF are the bytes not above 0xBF */
            acc = _mm_sub_epi8(acc, _mm_cmpgt_epi8(
                      _mm_loadu_si128((const __m128i *) (p + i)), cont));
        }
        acc = _mm_sad_epu8(acc, _mm_setzero_si128());
        count += (size_t) _mm_cvtsi128_si32(acc)
                 + (size_t) _mm_extract_epi16(acc, 4);
    }
#endif
    for (; i < n; i++) {
        count += (p[i] & 0xC0) != 0x80;
    }
    return count;
}

const char *
sh_budget_why_name(sh_budget_why_t why)
{
    switch (why) {
    case SH_BUDGET_WHY_MARKUP:
        return "markup";
    case SH_BUDGET_WHY_PARSER:
        return "parser";
    case SH_BUDGET_WHY_NAMES:
        return "names";
    case SH_BUDGET_WHY_AMBIGUOUS:
        return "ambiguous";
    case SH_BUDGET_WHY_RUN:
        return "run";
    case SH_BUDGET_WHY_CPU:
        return "cpu";
    case SH_BUDGET_WHY_DEPTH:
        return "depth";
    default:
        return "none";
    }
}

void
sh_budget_over(sh_budget_t *b, sh_budget_why_t why)
{
    if (b->verdict == SH_BUDGET_OK) {
        b->verdict = SH_BUDGET_EXCEEDED;
        b->why = why;
    }
}

/* ---- what the parser reports ------------------------------------------ */

/*
 * The parser reports on input the model has passed already, and the
 * model may have stopped the page further on: the parser still reads
 * what it was handed before that point, and may go over its own budget
 * there, as it would have had it been handed that input earlier.  Over
 * budget is then the verdict whatever the model found later (a run too
 * large), so that it does not depend on the chunking.
 */
static int
parser_over(sh_budget_t *b, sh_budget_why_t why)
{
    b->parser_over = 1;
    if (b->verdict != SH_BUDGET_EXCEEDED) {
        b->verdict = SH_BUDGET_EXCEEDED;
        b->why = why;
    }
    return -1;
}

int
sh_budget_parser(sh_budget_t *b, uint64_t pos, int error,
                 sh_budget_walk_t walk, size_t depth, size_t names)
{
    uint64_t units = error ? COST_ERROR : 0;

    if (b->parser_over) {
        return -1;
    }
    if (walk == SH_BUDGET_WALK_NAMES) {
        units += (uint64_t) depth * COST_STEP;
    } else if (walk == SH_BUDGET_WALK_PRIORITY && b->walked_at != pos + 1) {
        /* One walk an end tag, however many elements it closes (and
         * reports, each, as an error at the same place). */
        units += (uint64_t) depth * (COST_STEP + COST_STEP_PRIO);
        b->walked_at = pos + 1;
    }
    b->parser += units;
    if (b->parser > pos * SH_BUDGET_PARSER_PER_BYTE + SH_BUDGET_PARSER_FIXED) {
        return parser_over(b, SH_BUDGET_WHY_PARSER);
    }
    if (names > SH_BUDGET_NAMES_MAX) {
        return parser_over(b, SH_BUDGET_WHY_NAMES);
    }
    return 0;
}
