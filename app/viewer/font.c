#include "font.h"

#include <string.h>

#include "render/font5x9.h"

void pbfview_font_atlas(unsigned char *pixels) {
    memset(pixels, 0, (size_t)PBFVIEW_FONT_ATLAS_W * PBFVIEW_FONT_ATLAS_H);
    const int cells = PBFVIEW_FONT_COLUMNS * PBFVIEW_FONT_ROWS;
    for (int cell = 0; cell < cells; ++cell) {
        const int c = cell + 32;
        const pbfapp_glyph *g = pbfapp_font_glyph(c);
        const int x0 = (cell % PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_W;
        const int y0 = (cell / PBFVIEW_FONT_COLUMNS) * PBFVIEW_FONT_CELL_H;
        for (int y = 0; y < PBFVIEW_FONT_CELL_H; ++y) {
            for (int x = 0; x < PBFVIEW_FONT_CELL_W; ++x) {
                int on = c == PBFVIEW_FONT_SOLID ? 1 : pbfapp_font_ink(g, x, y);
                pixels[(size_t)(y0 + y) * PBFVIEW_FONT_ATLAS_W + (size_t)(x0 + x)] = on ? 255 : 0;
            }
        }
    }
}
