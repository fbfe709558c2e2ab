/*
 * cli_args.h -- the one argument parser of the `simhash` subcommands.
 *
 * Every subcommand declares its options in a table, one row each: the
 * name, the name of its value (none for a flag), where the value goes
 * and how it is read, and a line of help.  The parser reads argv against
 * the command's table, the match rule options' (cli_match_t) and the
 * extraction options' (cli_extract_t) when the command takes them, and
 * the usage is printed from the same tables, so an option, its parsing
 * and its help cannot part.  What a row's target holds before parsing is
 * its default, and the help says it (a number 0 is "not set": the help
 * line says what then).
 *
 * Options and operands may come in any order, unless the command says
 * that its options come first (c->options_first); "--" ends the options.
 * Errors are one line on stderr: "simhash: fingerprint: unknown option
 * --bogus (see --help)", "simhash: --list needs a value", or the row's own
 * ("--shingle: "0" is not a number from 1 to 8").
 */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdio.h>

typedef enum {
    CLI_FLAG = 0,   /* int *: set to 1 */
    CLI_STRING,     /* const char **: the value */
    CLI_UINT,       /* unsigned *: a number from min to max */
    CLI_CALL        /* set(target, name, value) reads it */
} cli_kind_t;

/* Reads one option's value into target: 0, or -1 after printing why. */
typedef int (*cli_set_fn)(void *target, const char *name, const char *value);

/* The default a row's target holds, for the help ("" or NULL: none). */
typedef const char *(*cli_show_fn)(const void *target, char *buf,
                                   size_t len);

typedef struct {
    const char    *name;        /* "--list", "-o"; NULL ends a table */
    const char    *arg;         /* its value's name, "PATHS"; NULL: a flag */
    cli_kind_t     kind;
    void          *target;
    cli_set_fn     set;         /* CLI_CALL */
    unsigned long  min, max;    /* CLI_UINT */
    cli_show_fn    show;        /* NULL: the kind's (a number, a string) */
    const char    *help;        /* '\n' between lines; NULL: not listed */
} cli_opt_t;

#define CLI_OPT_FLAG(name, target, help)                                     \
    { name, NULL, CLI_FLAG, target, NULL, 0, 0, NULL, help }
#define CLI_OPT_STRING(name, arg, target, help)                              \
    { name, arg, CLI_STRING, target, NULL, 0, 0, NULL, help }
#define CLI_OPT_UINT(name, arg, target, min, max, help)                      \
    { name, arg, CLI_UINT, target, NULL, min, max, NULL, help }
#define CLI_OPT_CALL(name, arg, target, set, show, help)                     \
    { name, arg, CLI_CALL, target, set, 0, 0, show, help }
#define CLI_OPT_END                                                          \
    { NULL, NULL, CLI_FLAG, NULL, NULL, 0, 0, NULL, NULL }

typedef struct cli_extract_s cli_extract_t;
typedef struct cli_match_s   cli_match_t;

/* A subcommand: its name, its usage and its tables. */
typedef struct {
    const char      *name;      /* "fingerprint", "idf build": in errors */
    const char      *synopsis;  /* the usage up to the options */
    const cli_opt_t *opts;      /* its own options, or NULL */
    const char      *notes;     /* printed after them, or NULL */
    cli_match_t     *match;     /* takes the match rule options, or NULL */
    cli_extract_t   *extract;   /* takes the extraction options, or NULL */
    void           (*usage)(FILE *f);   /* prints the usage instead, for a
                                           command of several actions */
    int              options_first;     /* the first operand ends the
                                           options (FILE... that may look
                                           like one) */
} cli_cmd_t;

typedef enum {
    CLI_PARSED = 0,     /* the operands are argv[*first .. argc) */
    CLI_HELP,           /* --help: the usage is printed (exit 0) */
    CLI_BAD             /* the error is printed (exit 2) */
} cli_parse_t;

/* Parse argv[start ..) (argv is reordered: operands last, in order). */
cli_parse_t cli_parse(const cli_cmd_t *c, int argc, char **argv, int start,
                      int *first);

/* The usage, from the tables. */
void cli_usage(FILE *f, const cli_cmd_t *c);

/* The rows of one table, as the usage lists them. */
void cli_opts_usage(FILE *f, const cli_opt_t *opts);

/* argv[*i], when one of the table's options: taken with its value (*i
 * moved past it), 1; a bad value, -1 (error printed); not one, 0. */
int cli_opts_take(const cli_opt_t *opts, int argc, char **argv, int *i);

/* Readers for CLI_CALL rows that several commands share. */
int cli_set_recall(void *target, const char *name, const char *value);
int cli_set_nats(void *target, const char *name, const char *value);
const char *cli_show_float(const void *target, char *buf, size_t len);

#endif
