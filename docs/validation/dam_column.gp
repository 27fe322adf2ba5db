# dam_column.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot dam_column.gp`.
set terminal pngcairo size 1000,600 noenhanced font ",11"
set output 'dam_column.png'
set grid
set key box opaque
set title 'Dam break: residual column height at the back wall'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'height / initial height 2L'
set xrange [0:3.5]
set yrange [0:1.05]
set key top right
plot 'dam_n18_it4.dat' using 2:4 title 'n = 18' with lines lw 2 lc 1, \
     'dam_n36_it4.dat' using 2:4 title 'n = 36' with lines lw 2 lc 2, \
     'dam_n72_it4.dat' using 2:4 title 'n = 72' with lines lw 2 lc 3
