# energy.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot energy.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'energy.png'
set grid
set key box opaque
set title 'Dam break: energy (kinetic + potential from the floor) / initial'
set xlabel 't (s)'
set ylabel 'E / E(0)'
set yrange [0:1.05]
set key outside right
plot 'dam_n36_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 36)' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 36)' with lines lw 2 lc 2, \
     'dam_n18_it4_vort0.dat' using 1:10 title 'E, vorticity 0 (n = 18)' with lines dt 2 lc 1, \
     'dam_n18_it4.dat' using 1:10 title 'E, vorticity 0.01 (n = 18)' with lines dt 2 lc 2, \
     'dam_n36_it4_vort0.dat' using 1:8 title 'kinetic, vorticity 0 (n = 36)' with lines lc 3, \
     'dam_n36_it4_vort0.dat' using 1:9 title 'potential, vorticity 0 (n = 36)' with lines lc 4
