# docs/quality-match.png: the frontier of the two match rules (sh_match.h),
# recall on the pairs with Jaccard >= 0.9 against the close strangers
# accepted (Jaccard < 0.5), on the two corpora of `make eval`.
#   gnuplot -e "docsfile='...'; manfile='...'; outfile='...'" quality-match.gp
# Data: sh-eval's match-NAME.dat (columns: weighted, h, T, recall J>=0.9,
# recall J>=0.8, strangers, of them prose, prose pairs, P(random) median,
# 90th percentile, max).
set terminal pngcairo size 1100,480 noenhanced font "sans,10"
set output outfile
set multiplot layout 1,2 title "Match rules: near-duplicates found against close strangers accepted (4 hash keys pooled)"
set xlabel "close strangers accepted (J < 0.5) + 1, expected count, log scale"
set ylabel "recall, pairs with J >= 0.9"
set logscale x
set xrange [0.9:2000]
set yrange [0:1.02]
set grid
set key bottom right
ham(c) = ($1 == 0 ? c : 1/0)
wtd(cap, c) = ($1 == 1 && $2 == cap ? c : 1/0)
do for [i = 1:2] {
    file = i == 1 ? docsfile : manfile
    set title (i == 1 ? "rust-doc std ~ core/alloc; Python and PostgreSQL manuals" \
                      : "short pages: Linux manual pages, mandoc ~ man2html")
    plot file using (ham($6 + 1)):4 with linespoints pt 7 lc rgb "#c03030" title "hamming, H <= h", \
         file using (ham($6 + 1)):4:(sprintf("%d", $2)) with labels offset 0.8,-0.6 tc rgb "#c03030" notitle, \
         file using (wtd(10, $6 + 1)):4 with linespoints pt 6 ps 0.6 lc rgb "#2060b0" title "weighted, H <= 10, T = 0.5 .. 64", \
         file using (($1 == 1 && $2 == 10 && $3 == 12) ? $6 + 1 : 1/0):4 with points pt 5 ps 1.4 lc rgb "#2060b0" title "weighted, default T = 12"
}
unset multiplot
