# dam_front_iterations.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot dam_front_iterations.gp`.
set terminal pngcairo size 1000,650 noenhanced font ",11"
set output 'dam_front_iterations.png'
set grid
set key box opaque
set title 'Dam break: surge front vs solver iterations (n = 36; dashed n = 18)'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'Z = front / L'
set xrange [0:3.5]
set yrange [0.9:5]
set key top left
plot 'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with points pt 5 ps 1.4 lc rgb 'black', \
     'dam_n36_it2.dat' using 2:3 title '2 iterations' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:3 title '4 iterations' with lines lw 2 lc 2, \
     'dam_n36_it8.dat' using 2:3 title '8 iterations' with lines lw 2 lc 3, \
     'dam_n36_it16.dat' using 2:3 title '16 iterations' with lines lw 2 lc 4, \
     'dam_n18_it2.dat' using 2:3 title '2 iterations (n = 18)' with lines lc 1 dt 2, \
     'dam_n18_it16.dat' using 2:3 title '16 iterations (n = 18)' with lines lc 4 dt 2
