# dam_density.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot dam_density.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'dam_density.png'
set grid
set key box opaque
set title 'Dam break: average density error vs solver iterations'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'average density error (%)'
set xrange [0:3.5]
set logscale y
set key outside right
plot 'dam_n36_it2.dat' using 2:5 title 'avg, 2 it' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:5 title 'avg, 4 it' with lines lw 2 lc 2, \
     'dam_n36_it8.dat' using 2:5 title 'avg, 8 it' with lines lw 2 lc 3, \
     'dam_n36_it16.dat' using 2:5 title 'avg, 16 it' with lines lw 2 lc 4, \
     'dam_n18_it2.dat' using 2:5 title 'avg, 2 it (n = 18)' with lines dt 2 lc 1, \
     'dam_n18_it4.dat' using 2:5 title 'avg, 4 it (n = 18)' with lines dt 2 lc 2, \
     'dam_n18_it8.dat' using 2:5 title 'avg, 8 it (n = 18)' with lines dt 2 lc 3, \
     'dam_n18_it16.dat' using 2:5 title 'avg, 16 it (n = 18)' with lines dt 2 lc 4
