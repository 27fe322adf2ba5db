# hydro_surface.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot hydro_surface.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'hydro_surface.png'
set grid
set key box opaque
set title 'Hydrostatic column: free-surface height (4 iterations unless named)'
set xlabel 't (s)'
set ylabel 'surface height - H0, % of H0'
set yrange [-3:3]
set key outside right
plot 'hydro_n18_it4.dat' using 1:7 title 'surface, n = 18' with lines lw 2 lc 1, \
     'hydro_n36_it4.dat' using 1:7 title 'surface, n = 36' with lines lw 2 lc 2, \
     'hydro_n72_it4.dat' using 1:7 title 'surface, n = 72' with lines lw 2 lc 3, \
     'hydro_n36_it8.dat' using 1:7 title 'surface, n = 36, 8 it' with lines dt 2 lc 4, \
     'hydro_n36_it16.dat' using 1:7 title 'surface, n = 36, 16 it' with lines dt 2 lc 5, \
     1 title 'target +-1 %' with lines lc rgb 'black' dt 3, \
     -1 notitle with lines lc rgb 'black' dt 3
