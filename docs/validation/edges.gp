# edges.png from the .dat files of this folder; written by `pbf validate`.
# Redraw: cd into this folder, then `gnuplot edges.gp`.
set terminal pngcairo size 900,600 noenhanced font ",11"
set output 'edges.png'
set grid
set key box opaque
set title 'Walls and edges: highest particle at a side wall above the liquid beside it (dam break L deep)'
set xlabel 'T = t sqrt(2g/L)'
set ylabel 'climb (particle radii r)'
set key top left
plot 'edges_n18_it4.dat' using 2:13 title 'n = 18' with lines lw 2 lc 1, \
     'edges_n36_it4.dat' using 2:13 title 'n = 36' with lines lw 2 lc 2, \
     2 title 'target: at most 2 r' with lines lc rgb 'black' dt 3
