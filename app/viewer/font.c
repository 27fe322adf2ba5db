#include "font.h"

#include <string.h>

#include "font5x7.h"

void pbfview_font_atlas(unsigned char *pixels) {
    memset(pixels, 0, (size_t)PBFVIEW_FONT_ATLAS_W * PBFVIEW_FONT_ATLAS_H);
    const int cells = PBFVIEW_FONT_COLUMNS * PBFVIEW_FONT_ROWS;
    const size_t glyphs = sizeof pbfapp_font5x7 / sizeof pbfapp_font5x7[0];
    for (int cell = 0; cell < cells; ++cell) {
        const int c = cell + 32;
        const char *const *rows = NULL;
        for (size_t g = 0; g < glyphs && !rows; ++g)
            if (pbfapp_font5x7[g].c == c) rows = pbfapp_font5x7[g].rows;
        const int x0 = (cell % PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_W;
        const int y0 = (cell / PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_H;
        for (int y = 0; y < PBFVIEW_FONT_CELL_H; ++y) {
            for (int x = 0; x < PBFVIEW_FONT_CELL_W; ++x) {
                int on = 0;
                if (c == PBFVIEW_FONT_SOLID)
                    on = 1;
                else if (rows && x < PBFVIEW_FONT_GLYPH_W && y < PBFVIEW_FONT_GLYPH_H)
                    on = rows[y][x] == '#';
                pixels[(size_t)(y0 + y) * PBFVIEW_FONT_ATLAS_W + (size_t)(x0 + x)] = on ? 255 : 0;
            }
        }
    }
}
