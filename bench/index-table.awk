# index-table.awk -- the markdown summary of `simhash bench --json`: one
# row per n, queries/s of every method, PSM's k and recall, and PSM's
# speed-up over 10-table BPHS.  Usage: awk -f bench/index-table.awk FILE
function field(line, key,    re, s) {
    re = "\"" key "\": \"?[^,}\"]*"
    if (match(line, re) == 0) return ""
    s = substr(line, RSTART, RLENGTH)
    sub("\"" key "\": \"?", "", s)
    return s
}
/"method"/ {
    m = field($0, "method"); n = field($0, "n")
    if (m == "learner") next
    if (field($0, "rule") == "weighted") next      # bench/25-weighted.sh
    if (!(n in seen)) { seen[n] = 1; order[++nn] = n }
    qps[m, n] = field($0, "qps"); rec[m, n] = field($0, "recall")
    kk[m, n] = field($0, "k"); bpe[m] = field($0, "bytes_per_entry")
}
END {
    printf "| n | PSM_F q/s (k, recall) | PSM_A q/s (k, recall) | BPHS4 F / A | BPHS10 F / A | BPHS20 F / A | brute F | PSM_F / BPHS10_F | PSM_A / BPHS10_A |\n"
    printf "|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= nn; i++) {
        n = order[i]; lg = 0; for (v = n; v > 1; v /= 2) lg++
        printf "| 2^%d | %s (%s, %s) | %s (%s, %s) | %s / %s | %s / %s | %s / %s | %s | %.1fx | %.1fx |\n", lg,
            qps["PSM_F", n], kk["PSM_F", n], rec["PSM_F", n],
            qps["PSM_A", n], kk["PSM_A", n], rec["PSM_A", n],
            qps["BPHS4_F", n] == "" ? "-" : qps["BPHS4_F", n], qps["BPHS4_A", n] == "" ? "-" : qps["BPHS4_A", n],
            qps["BPHS10_F", n], qps["BPHS10_A", n],
            qps["BPHS20_F", n] == "" ? "-" : qps["BPHS20_F", n], qps["BPHS20_A", n] == "" ? "-" : qps["BPHS20_A", n],
            qps["BRUTE_F", n] == "" ? "-" : qps["BRUTE_F", n],
            qps["PSM_F", n] / qps["BPHS10_F", n], qps["PSM_A", n] / qps["BPHS10_A", n]
    }
    printf "\nFingerprint bytes per stored entry: PSM %s, BPHS4 %s, BPHS10 %s, BPHS20 %s (document references and records counted apart).\n",
        bpe["PSM_F"], bpe["BPHS4_F"], bpe["BPHS10_F"], bpe["BPHS20_F"]
}
