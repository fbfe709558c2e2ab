/*
 * cli.h -- what the `simhash` subcommands share: the command table, error
 * reporting, the extraction and match rule options (tables of the
 * argument parser, cli_args.h), and reading pages and path lists.
 *
 * Each subcommand lives in cmd_NAME.c and exports `int cmd_NAME(int argc,
 * char **argv)` (argv[0] is the subcommand name); main.c dispatches.
 * Exit status: 0 success, 1 runtime failure, 2 usage error.
 */
#ifndef SH_CLI_H
#define SH_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "cli_args.h"
#include "sh_doc.h"
#include "sh_match.h"

typedef struct {
    const char *name;
    int       (*run)(int argc, char **argv);
    const char *summary;
} cli_command_t;

/* One-line error on stderr: "simhash: <message>". */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The extraction options of every subcommand that fingerprints pages, a
 * table (cli_args.h) whose rows point into the struct: cli_extract_init
 * sets the library's defaults and builds it.  cli_extract_arg() takes
 * argv[*i] (and its value) when it is one of them, as cli_opts_take().
 */
#define CLI_EXTRACT_NOPTS   12

struct cli_extract_s {
    sh_options_t opts;
    const char  *charset;       /* --charset: as if from Content-Type */
    cli_opt_t    table[CLI_EXTRACT_NOPTS + 1];
};

void cli_extract_init(cli_extract_t *x);
int  cli_extract_arg(cli_extract_t *x, int argc, char **argv, int *i);
void cli_extract_usage(FILE *f, const cli_extract_t *x);
/* Compile the options; prints the error and returns NULL on failure. */
sh_config_t *cli_extract_config(const cli_extract_t *x);

/* Parse a non-negative integer option value in [min, max]. */
int cli_parse_uint(const char *opt, const char *s, unsigned long min,
                   unsigned long max, unsigned long *out);

/*
 * Read a list of paths, one per line ("-" = stdin).  Empty lines are
 * skipped.  Returns 0, or -1 after printing the error.
 */
int  cli_read_list(const char *path, char ***paths, size_t *n);
void cli_free_list(char **paths, size_t n);

/*
 * Stream one file ("-" = stdin) through a new document in 64 KB reads and
 * finish it; `hook` (may be NULL) sees every token.  Returns the finished
 * document, whose features the caller may read and must free, or NULL after
 * printing the error.
 */
sh_doc_t *cli_read_page(sh_config_t *cfg, const char *path,
                        const char *charset, sh_token_fn hook, void *arg,
                        sh_result_t *res);

/* The same, and `block_hook` (may be NULL) sees the end of every block
 * (sh_doc_set_block_hook); both hooks get `arg`. */
sh_doc_t *cli_read_page_blocks(sh_config_t *cfg, const char *path,
                               const char *charset, sh_token_fn hook,
                               sh_block_fn block_hook, void *arg,
                               sh_result_t *res);

/* The same, keeping only the result. */
int cli_fingerprint_file(sh_config_t *cfg, const char *path,
                         const char *charset, sh_result_t *res);

/*
 * The match rule options (sh_match.h) of the subcommands that decide
 * near-duplicates: --match hamming|weighted, --h N (the radius, or the cap
 * on H), --threshold T (nats), --volatility FILE; a table (cli_args.h)
 * built by cli_match_init.  cli_match_finish() applies the rule's defaults
 * and checks the ranges (printing the error, -1).
 */
#define CLI_MATCH_NOPTS     4

struct cli_match_s {
    sh_match_opts_t  opts;      /* the result, after cli_match_finish */
    sh_rule_t        rule;
    int              rule_given;    /* --match was given */
    unsigned         h;         /* --h */
    int              h_given;
    double           t;         /* --threshold, nats */
    int              t_given;
    sh_volatility_t *vol;       /* --volatility, owned */
    cli_opt_t        table[CLI_MATCH_NOPTS + 1];
};

void cli_match_init(cli_match_t *m);
int  cli_match_finish(cli_match_t *m);
void cli_match_free(cli_match_t *m);
void cli_match_usage(FILE *f, const cli_match_t *m);

/* The help flag test every subcommand uses. */
int cli_is_help(const char *arg);

/*
 * SplitMix64's finaliser: a well-spread 64-bit value of a counter, for the
 * synthetic documents of `cluster load --random` and `store bench`, which
 * must be the same from one run to the next.
 */
static inline uint64_t
cli_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
