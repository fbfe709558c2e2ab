/*
 * sh_popcnt.h -- hardware popcount for the search loops of a generic
 * x86-64 build.
 *
 * The build targets plain x86-64, where __builtin_popcountll is a call
 * into libgcc (a table walk); every Hamming comparison of the index, BPHS
 * and brute force goes through it.  SH_POPCNT_CLONES compiles a function
 * twice, with and without the POPCNT instruction, and lets the dynamic
 * loader pick one for the running CPU (GCC function multiversioning), so
 * one binary is both portable and fast.  Callees the function inlines are
 * compiled into each clone.
 */
#ifndef SH_POPCNT_H
#define SH_POPCNT_H

#if defined(__x86_64__) && !defined(__POPCNT__) && defined(__GNUC__) \
    && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SH_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define SH_POPCNT_CLONES
#endif

#endif
