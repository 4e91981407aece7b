"""The colours and words of the outlined views, one set for every picture of them: the report's
gallery (``medscope.render.gallery``) and ``medscope views export`` draw with these, so a reader
who learnt one legend reads the other (counterfactual paper Figure 2 style)."""

from __future__ import annotations

import numpy as np

LESION = np.array([255, 220, 0], np.uint8)  # yellow, solid: the lesion (its mask, or its box)
EDIT = np.array([0, 220, 255], np.uint8)  # cyan, dashed: the region an edit changed

LEGEND = "yellow: lesion; dashed cyan: edited region"

# what each panel of a case shows, in the order the gallery and the export set them
PANEL_KINDS = ("original", "target_removal", "random_removal")
PANEL_CAPTIONS = {
    "original": "Original: the lesion outlined in yellow",
    "target_removal": "Lesion erased: the erased region dashed cyan",
    "random_removal": "Control: an edit elsewhere dashed cyan, the lesion in yellow",
}
