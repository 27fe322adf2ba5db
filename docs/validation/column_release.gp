# column_release.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot column_release.gp`.
set terminal pngcairo size 1400,600 noenhanced font ",11"
set output 'column_release.png'
set grid
set key box opaque
set multiplot layout 1,2 title 'Column release: the column at the back wall after the release (4 iterations)'
set title 'height at the back wall - initial height'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'rise (particle radii r)'
set xrange [0:2.0]
set yrange [-6:2]
set key bottom left
plot 'dam_n18_it4.dat' using 2:11 title 'top at the wall, n = 18' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:11 title 'top at the wall, n = 36' with lines lw 2 lc 2, \
     'dam_n72_it4.dat' using 2:11 title 'top at the wall, n = 72' with lines lw 2 lc 3, \
     'dam_n18_it4.dat' using 2:12 title 'column (no lone particles), n = 18' with lines dt 2 lc 1, \
     'dam_n36_it4.dat' using 2:12 title 'column (no lone particles), n = 36' with lines dt 2 lc 2, \
     'dam_n72_it4.dat' using 2:12 title 'column (no lone particles), n = 72' with lines dt 2 lc 3, \
     0.5 title 'target: at most +0.5 r' with lines lc rgb 'black' dt 3
set title 'surge front'
set ylabel 'Z = front / L'
set yrange [0.9:5]
set key top left
plot 'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996' with points pt 5 ps 1.2 lc rgb 'black', \
     1+2*x title 'Ritter: Z = 1 + 2T' with lines lc rgb 'gray40' dt 2, \
     'dam_n18_it4.dat' using 2:3 title 'n = 18' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:3 title 'n = 36' with lines lw 2 lc 2, \
     'dam_n72_it4.dat' using 2:3 title 'n = 72' with lines lw 2 lc 3
unset multiplot
