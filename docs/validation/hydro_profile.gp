# hydro_profile.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot hydro_profile.gp`.
set terminal pngcairo size 900,700 noenhanced font ",11"
set output 'hydro_profile.png'
set grid
set key box opaque
set title 'Hydrostatic column: settled density against height (final state)'
set ylabel 'height y / H0 (H0: height of the initial volume)'
set xlabel 'mean density of a layer / rest density'
set yrange [0:1.15]
set xrange [0.9:1.04]
set samples 101
set key bottom left
plot 'hydro_n18_it4_profile.dat' using 2:1 title 'rho/rho0, n = 18' with linespoints pt 7 ps 0.6 lc 1, \
     'hydro_n36_it4_profile.dat' using 2:1 title 'rho/rho0, n = 36' with linespoints pt 7 ps 0.5 lc 2, \
     'hydro_n72_it4_profile.dat' using 2:1 title 'rho/rho0, n = 72' with linespoints pt 7 ps 0.4 lc 3, \
     '+' using (1):($0/100.0*1.2) title 'hydrostatic expectation (incompressible): rho0' with lines lw 2 lc rgb 'black' dt 2
