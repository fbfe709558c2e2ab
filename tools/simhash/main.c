/*
 * simhash -- command-line face of the core library.  main() only dispatches;
 * each subcommand is in cmd_NAME.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sh_library.h"

int cmd_fingerprint(int argc, char **argv);
int cmd_distance(int argc, char **argv);
int cmd_text(int argc, char **argv);
int cmd_idf(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_dedup(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_store_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_entry(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_cluster(int argc, char **argv);

static const cli_command_t commands[] = {
    { "fingerprint", cmd_fingerprint, "print the simhash of each page" },
    { "distance",    cmd_distance,    "Hamming distance between two pages" },
    { "text",        cmd_text,        "print the tokens a page yields" },
    { "idf",         cmd_idf,         "build an IDF table from a corpus" },
    { "index",       cmd_index,       "build, query, inspect a PSM index" },
    { "dedup",       cmd_dedup,       "every near-duplicate pair of a corpus" },
    { "bench",       cmd_bench,       "benchmark PSM against BPHS" },
    { "store-bench", cmd_store_bench, "the compact store at 2^20..2^27" },
    { "calibrate",   cmd_calibrate,   "volatility table from a corpus" },
    { "entry",       cmd_entry,       "write or verify a stream entry" },
    { "explain",     cmd_explain,     "why a node would fetch or drop a URL" },
    { "cluster",     cmd_cluster,     "the tier's index in a Redis Cluster" },
};

static void
usage(FILE *f)
{
    size_t i;

    fprintf(f, "usage: simhash COMMAND [options] ...\n\ncommands:\n");
    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(f, "\n`simhash COMMAND --help` describes each.\n");
}

int
main(int argc, char **argv)
{
    size_t i;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }

    sh_library_init();

    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            return commands[i].run(argc - 1, argv + 1);
        }
    }

    cli_error("unknown command '%s' (see simhash --help)", argv[1]);
    return 2;
}
