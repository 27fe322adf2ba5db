/*
 * The text overlay's font texture: the 5x9 glyphs of app/render/font5x9.h (shared with the headless
 * renderer; 7 rows to the baseline and 2 of descender) laid out by pbfview_font_atlas in a
 * 16 x 6 grid of 6x10 cells, one per code 32..127 (one pixel of spacing right and below).
 * Characters without a glyph are blank; cell 95 (DEL) is a solid block, used for the overlay's
 * background panel.
 */
#ifndef PBFVIEW_FONT_H
#define PBFVIEW_FONT_H

#define PBFVIEW_FONT_GLYPH_W 5
#define PBFVIEW_FONT_GLYPH_H 9
#define PBFVIEW_FONT_CELL_W 6
#define PBFVIEW_FONT_CELL_H 10
#define PBFVIEW_FONT_COLUMNS 16
#define PBFVIEW_FONT_ROWS 6
#define PBFVIEW_FONT_ATLAS_W (PBFVIEW_FONT_COLUMNS * PBFVIEW_FONT_CELL_W) /* 96 */
#define PBFVIEW_FONT_ATLAS_H (PBFVIEW_FONT_ROWS * PBFVIEW_FONT_CELL_H)    /* 60 */
#define PBFVIEW_FONT_SOLID 127 /* character code of the solid block */

/* Fills `pixels` (PBFVIEW_FONT_ATLAS_W * PBFVIEW_FONT_ATLAS_H bytes, row 0 at the top) with
 * 255 where a glyph pixel is set and 0 elsewhere. Character c is in cell c - 32. */
void pbfview_font_atlas(unsigned char *pixels);

#endif /* PBFVIEW_FONT_H */
