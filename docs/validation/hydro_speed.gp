# hydro_speed.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot hydro_speed.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'hydro_speed.png'
set grid
set key box opaque
set title 'Hydrostatic column: residual speed (4 iterations)'
set xlabel 't (s)'
set ylabel 'speed / sqrt(g H0) (%)'
set logscale y
set key outside right
plot 'hydro_n18_it4.dat' using 1:($8*100) title 'max, n = 18' with lines lc 1, \
     'hydro_n36_it4.dat' using 1:($8*100) title 'max, n = 36' with lines lc 2, \
     'hydro_n72_it4.dat' using 1:($8*100) title 'max, n = 72' with lines lc 3, \
     'hydro_n18_it4.dat' using 1:($9*100) title 'mean, n = 18' with lines lw 2 dt 2 lc 1, \
     'hydro_n36_it4.dat' using 1:($9*100) title 'mean, n = 36' with lines lw 2 dt 2 lc 2, \
     'hydro_n72_it4.dat' using 1:($9*100) title 'mean, n = 72' with lines lw 2 dt 2 lc 3, \
     1 title 'target 1 %' with lines lc rgb 'black' dt 3
