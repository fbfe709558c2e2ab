# Precision and recall of "Hamming distance <= h" against "Jaccard >= theta"
# (the form of Figure 6(a) in Sood & Loguinov 2011).  Drawn by tools/eval.sh:
#   gnuplot -e "datafile='docs/quality-h.dat'; outfile='docs/quality-h.png'" \
#           docs/quality-h.gp
# Columns of the data file: h, P(0.9), R(0.9), P(0.8), R(0.8), pairs, E[J].
if (!exists("datafile")) datafile = 'docs/quality-h.dat'
if (!exists("outfile")) outfile = 'docs/quality-h.png'
if (!exists("label")) label = ''

set terminal pngcairo size 800,500 noenhanced font ",11"
set output outfile
set title sprintf("simhash, configuration %s: precision and recall vs h", \
                 label)
set xlabel "Hamming distance h (a pair matches when H <= h)"
set ylabel "precision / recall"
set xrange [0:8]
set yrange [0:1.02]
set xtics 1
set ytics 0.1
set grid
set key bottom right
set arrow from 3, graph 0 to 3, graph 1 nohead dashtype 3 lc rgb "gray40"

plot datafile using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" \
         title "precision, J >= 0.9", \
     datafile using 1:3 with linespoints lw 2 pt 5 lc rgb "#d62728" \
         title "recall, J >= 0.9", \
     datafile using 1:4 with linespoints lw 1 pt 6 dt 2 lc rgb "#1f77b4" \
         title "precision, J >= 0.8", \
     datafile using 1:5 with linespoints lw 1 pt 4 dt 2 lc rgb "#d62728" \
         title "recall, J >= 0.8"
