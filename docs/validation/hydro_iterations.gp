# hydro_iterations.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot hydro_iterations.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'hydro_iterations.png'
set grid
set key box opaque
set title 'Hydrostatic column: density error vs solver iterations (n = 36)'
set xlabel 't (s)'
set ylabel 'density error (%)'
set logscale y
set key outside right
plot 'hydro_n36_it2.dat' using 1:2 title 'avg, 2 it' with lines lw 2 lc 1, \
     'hydro_n36_it4.dat' using 1:2 title 'avg, 4 it' with lines lw 2 lc 2, \
     'hydro_n36_it8.dat' using 1:2 title 'avg, 8 it' with lines lw 2 lc 3, \
     'hydro_n36_it16.dat' using 1:2 title 'avg, 16 it' with lines lw 2 lc 4, \
     'hydro_n36_it2.dat' using 1:3 title 'max, 2 it' with lines dt 2 lc 1, \
     'hydro_n36_it4.dat' using 1:3 title 'max, 4 it' with lines dt 2 lc 2, \
     'hydro_n36_it8.dat' using 1:3 title 'max, 8 it' with lines dt 2 lc 3, \
     'hydro_n36_it16.dat' using 1:3 title 'max, 16 it' with lines dt 2 lc 4
