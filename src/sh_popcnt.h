/*
 * sh_popcnt.h -- the Hamming distance, and hardware popcount for the
 * search loops of a generic x86-64 build.
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

#include <stdint.h>

#if defined(__x86_64__) && !defined(__POPCNT__) && defined(__GNUC__) \
    && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define SH_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define SH_POPCNT_CLONES
#endif

/* The Hamming distance between two fingerprints or sketches: the bits in
 * which they differ. */
static inline unsigned
sh_distance(uint64_t a, uint64_t b)
{
    return (unsigned) __builtin_popcountll(a ^ b);
}

#endif
