# hydro_density.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot hydro_density.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'hydro_density.png'
set grid
set key box opaque
set title 'Hydrostatic column: density error over time (4 iterations)'
set xlabel 't (s)'
set ylabel 'density error (%)'
set logscale y
set key outside right
plot 'hydro_n18_it4.dat' using 1:2 title 'avg, n = 18' with lines lw 2 lc 1, \
     'hydro_n36_it4.dat' using 1:2 title 'avg, n = 36' with lines lw 2 lc 2, \
     'hydro_n72_it4.dat' using 1:2 title 'avg, n = 72' with lines lw 2 lc 3, \
     'hydro_n18_it4.dat' using 1:3 title 'max, n = 18' with lines dt 2 lc 1, \
     'hydro_n36_it4.dat' using 1:3 title 'max, n = 36' with lines dt 2 lc 2, \
     'hydro_n72_it4.dat' using 1:3 title 'max, n = 72' with lines dt 2 lc 3, \
     0.5 title 'target avg 0.5 %' with lines lc rgb 'black' dt 3, \
     3.0 title 'target max 3 %' with lines lc rgb 'gray30' dt 4
