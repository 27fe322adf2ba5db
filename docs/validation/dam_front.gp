# dam_front.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot dam_front.gp`.
set terminal pngcairo size 1000,650 noenhanced font ",11"
set output 'dam_front.png'
set grid
set key box opaque
set title 'Dam break: surge front (4 iterations)'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'Z = front / L'
set xrange [0:3.5]
set yrange [0.9:5]
set key top left
plot 'ko_experiment.dat' using 1:2 title 'Koshizuka & Oka 1996 (experiment)' with points pt 5 ps 1.4 lc rgb 'black', \
     'mm_experiment.dat' index 0 using 1:2 title 'Martin & Moyce 1952, a = 2.25 in' with points pt 7 ps 1.2 lc rgb 'gray30', \
     'mm_experiment.dat' index 1 using 1:2 title 'Martin & Moyce 1952, a = 1.125 in' with points pt 6 ps 1.2 lc rgb 'gray30', \
     1+2*x title 'Ritter (inviscid shallow water): Z = 1 + 2T' with lines lc rgb 'gray40' dt 2, \
     'dam_n18_it4.dat' using 2:3 title 'pbf n = 18' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:3 title 'pbf n = 36' with lines lw 2 lc 2, \
     'dam_n72_it4.dat' using 2:3 title 'pbf n = 72' with lines lw 2 lc 3, \
     'dam_n36_it4.dat' using ($2+0.200):3 title 'pbf n = 36, shifted by dT = +0.200' with lines dt 2 lw 2 lc rgb 'black'
